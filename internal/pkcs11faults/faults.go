package pkcs11faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offload/offload/internal/devicewait"
)

// Injector makes chosen PKCS #11 calls of a provider fail with a
// chosen CKR_* value, or answer late, so that tests and chaos drills can
// watch the recovery described under Faults in the package documentation
// without pulling a device out. Set Config.Faults before Open: the
// provider then calls the module through the injector, which passes every
// call on unchanged until a Fault is injected. A nil Config.Faults adds no
// wrapper and costs nothing.
//
// Faults may be injected and cleared at any time from any goroutine. A
// failure is reported without calling the module, except where the
// standard says a failed call ends an operation (C_Sign, C_Encrypt,
// C_Decrypt) or a handle (C_CloseSession): those calls reach the module
// and their result is replaced. A delay is spent before the call, holding
// whatever the provider holds during it, as a slow device would.
//
// Use one injector per provider; providers of the same module may share
// one. The zero value is ready to use.
type Injector struct {
	mu       sync.Mutex
	rules    []*faultRule
	nextID   ID
	sessSlot map[uint]uint // session handle -> slot, for Fault.Slots

	active   atomic.Int32 // len(rules): the fast path skips the lock when 0
	calls    [numFaultFuncs]atomic.Uint64
	injected [numFaultFuncs]atomic.Uint64
}

// Fault is one injected failure or delay.
type Fault struct {
	// Calls names the PKCS #11 functions affected, with or without the
	// C_ prefix and in any case ("C_Sign", "EncryptInit"), or groups of
	// them, which are lower case and win over a function of
	// the same name: "sign" (SignInit and Sign), "encrypt", "decrypt",
	// "bulk" (both), "derive", "generate", "login", "open" (OpenSession),
	// "find", "objects", "probe" (GetTokenInfo), "slots", "all".
	Calls []string
	// Code is the CKR_* value the calls return (see ParseCKR);
	// CKR_OK (0) makes them succeed, after the delay.
	Code uint
	// Delay is added before each affected call; with MaxDelay above it,
	// the delay is drawn uniformly from [Delay, MaxDelay]. At most
	// MaxDelay.
	Delay, MaxDelay time.Duration
	// Times is how many calls the fault affects; 0: until removed.
	Times int
	// Slots limits the fault to calls on these slots or on sessions opened
	// on them (a token's slot is in Provider.Tokens); empty: every call.
	// Calls that name no slot (C_GetInfo, C_GetSlotList) never match a
	// fault with Slots.
	Slots []uint
}

// MaxDelay bounds Fault.Delay and Fault.MaxDelay, so that a drill
// cannot hang the provider's callers by mistake.
const MaxDelay = time.Minute

// ID names an injected fault for Remove.
type ID uint64

type faultRule struct {
	id    ID
	funcs uint32 // bit i: faultFuncs[i]
	code  uint
	delay time.Duration
	span  time.Duration // MaxDelay - Delay, when positive
	left  int           // calls left; < 0: until removed
	slots []uint
}

// faultFuncs are the module functions the provider calls (the API
// interface), in a fixed order: a function's index is its bit in a rule.
var faultFuncs = [...]string{
	"GetInfo", "GetSlotList", "GetSlotInfo", "GetTokenInfo", "GetMechanismList", "GetMechanismInfo",
	"OpenSession", "CloseSession", "GetSessionInfo", "Login",
	"CreateObject", "DestroyObject", "GetAttributeValue", "FindObjectsInit", "FindObjects", "FindObjectsFinal",
	"EncryptInit", "Encrypt", "DecryptInit", "Decrypt", "SignInit", "Sign", "GenerateKeyPair", "DeriveKey",
}

const numFaultFuncs = len(faultFuncs)

// Indices into faultFuncs, for the wrapper.
const (
	fnGetInfo = iota
	fnGetSlotList
	fnGetSlotInfo
	fnGetTokenInfo
	fnGetMechanismList
	fnGetMechanismInfo
	fnOpenSession
	fnCloseSession
	fnGetSessionInfo
	fnLogin
	fnCreateObject
	fnDestroyObject
	fnGetAttributeValue
	fnFindObjectsInit
	fnFindObjects
	fnFindObjectsFinal
	fnEncryptInit
	fnEncrypt
	fnDecryptInit
	fnDecrypt
	fnSignInit
	fnSign
	fnGenerateKeyPair
	fnDeriveKey
)

// faultGroups are the names Fault.Calls accepts besides function names,
// and the functions each stands for.
var faultGroups = map[string][]string{
	"sign":     {"SignInit", "Sign"},
	"encrypt":  {"EncryptInit", "Encrypt"},
	"decrypt":  {"DecryptInit", "Decrypt"},
	"bulk":     {"EncryptInit", "Encrypt", "DecryptInit", "Decrypt"},
	"derive":   {"DeriveKey"},
	"generate": {"GenerateKeyPair"},
	"login":    {"Login"},
	"open":     {"OpenSession"},
	"find":     {"FindObjectsInit", "FindObjects", "FindObjectsFinal"},
	"objects":  {"CreateObject", "DestroyObject", "GetAttributeValue", "FindObjectsInit", "FindObjects", "FindObjectsFinal"},
	"probe":    {"GetTokenInfo"},
	"slots":    {"GetSlotList", "GetSlotInfo", "GetTokenInfo"},
	"all":      faultFuncs[:],
}

// faultMask returns the bits of the functions names stands for.
func faultMask(names []string) (uint32, error) {
	if len(names) == 0 {
		return 0, errors.New("pkcs11faults: fault names no calls (use \"all\" for every call)")
	}
	var mask uint32
	for _, n := range names {
		m, ok := callBits(n)
		if !ok {
			return 0, fmt.Errorf("pkcs11faults: fault: unknown PKCS #11 call or group %q", n)
		}
		mask |= m
	}
	return mask, nil
}

// callBits resolves a group (lower case, exactly) or a function name
// (any case, C_ optional): "sign" is the group, "Sign" the function.
func callBits(name string) (uint32, bool) {
	name = strings.TrimSpace(name)
	if fns, ok := faultGroups[name]; ok {
		var m uint32
		for _, fn := range fns {
			m |= funcBit(fn)
		}
		return m, true
	}
	if b := funcBit(name); b != 0 {
		return b, true
	}
	return 0, false
}

func funcBit(name string) uint32 {
	if len(name) > 2 && strings.EqualFold(name[:2], "C_") {
		name = name[2:]
	}
	for i, fn := range faultFuncs {
		if strings.EqualFold(fn, name) {
			return 1 << i
		}
	}
	return 0
}

// Inject adds a fault and returns its id. It fails, changing nothing, on
// an unknown call name, a negative Times or delay, a delay above
// MaxDelay, a MaxDelay below Delay, or a fault that would do nothing
// (no code and no delay).
func (f *Injector) Inject(ft Fault) (ID, error) {
	if f == nil {
		return 0, errors.New("pkcs11faults: Inject on a nil Injector")
	}
	r, err := newFaultRule(ft)
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	r.id = f.nextID
	f.rules = append(f.rules, r)
	f.active.Store(int32(len(f.rules)))
	return r.id, nil
}

func newFaultRule(ft Fault) (*faultRule, error) {
	mask, err := faultMask(ft.Calls)
	if err != nil {
		return nil, err
	}
	switch {
	case ft.Times < 0:
		return nil, fmt.Errorf("pkcs11faults: fault: Times %d is negative (0 means until removed)", ft.Times)
	case ft.Delay < 0 || ft.MaxDelay < 0:
		return nil, errors.New("pkcs11faults: fault: negative delay")
	case max(ft.Delay, ft.MaxDelay) > MaxDelay:
		return nil, fmt.Errorf("pkcs11faults: fault: delay above %v (model a hung token with a failure code)", MaxDelay)
	case ft.MaxDelay != 0 && ft.MaxDelay < ft.Delay:
		return nil, fmt.Errorf("pkcs11faults: fault: MaxDelay %v is below Delay %v", ft.MaxDelay, ft.Delay)
	case ft.Code == 0 && ft.Delay == 0 && ft.MaxDelay == 0:
		return nil, errors.New("pkcs11faults: fault does nothing: give a CKR_* code, a delay or both")
	}
	r := &faultRule{funcs: mask, code: ft.Code, delay: ft.Delay, left: ft.Times, slots: slices.Clone(ft.Slots)}
	if ft.MaxDelay > ft.Delay {
		r.span = ft.MaxDelay - ft.Delay
	}
	if r.left == 0 {
		r.left = -1
	}
	return r, nil
}

// Fail is Inject of a fault making calls return code, times times
// (0: until removed).
func (f *Injector) Fail(code uint, times int, calls ...string) (ID, error) {
	return f.Inject(Fault{Calls: calls, Code: code, Times: times})
}

// Slow is Inject of a delay drawn from [min, max] before calls, times
// times (0: until removed).
func (f *Injector) Slow(min, max time.Duration, times int, calls ...string) (ID, error) {
	return f.Inject(Fault{Calls: calls, Delay: min, MaxDelay: max, Times: times})
}

// Remove removes one fault; it reports whether the fault was still there
// (a fault whose Times ran out is gone by itself).
func (f *Injector) Remove(id ID) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.rules)
	f.rules = slices.DeleteFunc(f.rules, func(r *faultRule) bool { return r.id == id })
	f.active.Store(int32(len(f.rules)))
	return len(f.rules) < n
}

// Clear removes every fault. Calls already sleeping finish their delay.
func (f *Injector) Clear() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
	f.active.Store(0)
}

// Active is the number of faults in force.
func (f *Injector) Active() int {
	if f == nil {
		return 0
	}
	return int(f.active.Load())
}

// Calls is the number of calls the provider made to a function, or to
// every function of a group, through the injector (0 for unknown names).
func (f *Injector) Calls(name string) uint64 {
	if f == nil {
		return 0
	}
	return sumCounts(&f.calls, name)
}

// Injected is the number of those calls a fault failed or delayed.
func (f *Injector) Injected(name string) uint64 {
	if f == nil {
		return 0
	}
	return sumCounts(&f.injected, name)
}

func sumCounts(counts *[numFaultFuncs]atomic.Uint64, name string) uint64 {
	bits, ok := callBits(name)
	if !ok {
		return 0
	}
	var n uint64
	for i := range counts {
		if bits&(1<<i) != 0 {
			n += counts[i].Load()
		}
	}
	return n
}

// before is called by the wrapper ahead of function fn on a slot (hasSlot
// false: the call names none). It sleeps for any delay and returns the
// CKR_* code to fail with, or 0.
func (f *Injector) before(fn int, slot uint, hasSlot bool) uint {
	f.calls[fn].Add(1)
	if f.active.Load() == 0 {
		return 0
	}
	code, delay, hit := f.match(fn, slot, hasSlot)
	if hit {
		f.injected[fn].Add(1)
	}
	if delay > 0 {
		devicewait.Wait(delay)
	}
	return code
}

// beforeSession is before for a call on session h.
func (f *Injector) beforeSession(fn int, h uint) uint {
	if f.active.Load() == 0 {
		f.calls[fn].Add(1)
		return 0
	}
	f.mu.Lock()
	slot, ok := f.sessSlot[h]
	f.mu.Unlock()
	return f.before(fn, slot, ok)
}

// match applies the faults matching a call: every matching delay-only
// fault and the first matching failure spend one of their Times and add
// their delay.
func (f *Injector) match(fn int, slot uint, hasSlot bool) (code uint, delay time.Duration, hit bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kept := f.rules[:0]
	for _, r := range f.rules {
		applies := r.funcs&(1<<fn) != 0 && (code == 0 || r.code == 0) &&
			(len(r.slots) == 0 || hasSlot && slices.Contains(r.slots, slot))
		if applies {
			hit = true
			if code == 0 {
				code = r.code
			}
			delay += r.delay
			if r.span > 0 {
				delay += rand.N(r.span + 1)
			}
			if r.left > 0 {
				r.left--
			}
		}
		if r.left != 0 {
			kept = append(kept, r)
		}
	}
	clear(f.rules[len(kept):])
	f.rules = kept
	f.active.Store(int32(len(kept)))
	return code, delay, hit
}

// opened and closed track which slot each session is on.
func (f *Injector) opened(h, slot uint) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sessSlot == nil {
		f.sessSlot = map[uint]uint{}
	}
	f.sessSlot[h] = slot
}

func (f *Injector) closed(h uint) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessSlot, h)
}
