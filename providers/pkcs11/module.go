//go:build cgo && !nopkcs11

package pkcs11

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/offload/offload/providers/pkcs11/uri"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/pkcs11"
)

// module is one loaded PKCS #11 library. C_Initialize is called once per
// module per process, however many providers use it; the last Close calls
// C_Finalize. Every call into the module holds mu for reading; a
// reinitialization (the only way SoftHSM and some HSMs show a token that
// was removed and created again) holds it for writing, and bumps gen so
// that sessions opened before it are dropped rather than used.
type module struct {
	path string
	ctx  *pkcs11.Ctx
	mu   sync.RWMutex
	gen  atomic.Uint64
	refs int // guarded by modules.mu

	lastReinit   time.Time     // guarded by mu (write)
	ownsInit     bool          // false when another user had initialized it
	libraryDesc  uri.TokenInfo // library fields of uri.TokenInfo
	reinitPeriod time.Duration

	loginMu sync.Mutex
	logins  map[string][]byte // token key -> tag of the PIN that logged it in
}

// pinTag is a process-keyed digest of a PIN, kept in memory only, to
// notice that a PIN source changed while the token stayed logged in.
func pinTag(pin string) []byte {
	m := hmac.New(sha256.New, processKey())
	m.Write([]byte(pin))
	return m.Sum(nil)
}

// loggedIn records the PIN that logged the token in.
func (m *module) loggedIn(t *token, pin string) {
	_, _, d := t.state()
	m.loginMu.Lock()
	defer m.loginMu.Unlock()
	if m.logins == nil {
		m.logins = map[string][]byte{}
	}
	m.logins[tokenKey(m.path, d.Label, d.Serial)] = pinTag(pin)
}

// checkLoggedInPIN refuses a token whose PIN differs from the one that
// logged it in, in this process, while it is still logged in (PKCS #11
// logs in the whole application, so the new PIN would never be checked
// and a wrong one would go unnoticed until the next start). The new PIN
// is not sent: a wrong one would spend one of the token's tries.
func (c *core) checkLoggedInPIN(t *token) error {
	t.mu.Lock()
	pin, src, d := t.pin, t.pinSrc, t.desc
	t.mu.Unlock()
	m := c.mod
	m.loginMu.Lock()
	tag, ok := m.logins[tokenKey(m.path, d.Label, d.Serial)]
	m.loginMu.Unlock()
	if !ok || pin == "" || hmac.Equal(tag, pinTag(pin)) || !c.stillLoggedIn(d.SlotID) {
		return nil
	}
	return &Error{Op: "log in", Token: d.Label, Class: ClassPIN, Err: fmt.Errorf(
		"the PIN from %s differs from the one the token is logged in with in this process; it is not sent while that login lasts "+
			"(a wrong PIN would spend one of the token's tries): restore the PIN source, or restart to log in with the new PIN", src)}
}

// stillLoggedIn opens a session on the slot to see whether the
// application is logged in.
func (c *core) stillLoggedIn(slot uint) bool {
	c.mod.mu.RLock()
	defer c.mod.mu.RUnlock()
	h, err := c.api.OpenSession(slot, pkcs11.CKF_SERIAL_SESSION)
	if err != nil {
		return false
	}
	defer c.api.CloseSession(h)
	info, err := c.api.GetSessionInfo(h)
	return err == nil && (info.State == pkcs11.CKS_RO_USER_FUNCTIONS || info.State == pkcs11.CKS_RW_USER_FUNCTIONS)
}

var modules = struct {
	sync.Mutex
	m map[string]*module
}{m: map[string]*module{}}

// openModule loads and initializes the module at path, or returns the one
// already loaded, counting references.
func openModule(path string) (m *module, fresh bool, err error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, false, &ModuleError{Module: path, Err: err}
	}
	modules.Lock()
	defer modules.Unlock()
	if m, ok := modules.m[real]; ok {
		m.refs++
		return m, false, nil
	}
	ctx := pkcs11.New(real)
	if ctx == nil {
		return nil, false, &ModuleError{Module: path, Err: errors.New("could not be loaded (not a PKCS #11 library, or a dependency is missing)")}
	}
	m = &module{path: real, ctx: ctx, refs: 1, ownsInit: true}
	if err := ctx.Initialize(); err != nil {
		var pe pkcs11.Error
		if errors.As(err, &pe) && pe == pkcs11.CKR_CRYPTOKI_ALREADY_INITIALIZED {
			m.ownsInit = false // someone else in this process initialized it
		} else {
			ctx.Destroy()
			return nil, false, &ModuleError{Module: path, Err: wrapErr(err, "initialize", "", "")}
		}
	}
	m.gen.Store(1)
	m.readLibraryInfo()
	modules.m[real] = m
	return m, true, nil
}

func (m *module) readLibraryInfo() {
	if info, err := m.ctx.GetInfo(); err == nil {
		m.libraryDesc = uri.TokenInfo{
			LibraryManufacturer: info.ManufacturerID,
			LibraryDescription:  info.LibraryDescription,
			LibraryVersion:      fmt.Sprintf("%d.%d", info.LibraryVersion.Major, info.LibraryVersion.Minor),
		}
	}
}

// release drops a reference; the last one finalizes and unloads.
func (m *module) release() error {
	modules.Lock()
	defer modules.Unlock()
	m.refs--
	if m.refs > 0 {
		return nil
	}
	delete(modules.m, m.path)
	m.mu.Lock()
	defer m.mu.Unlock()
	var err error
	if m.ownsInit {
		err = m.ctx.Finalize()
	}
	m.ctx.Destroy()
	m.gen.Add(1)
	return wrapErr(err, "finalize module "+m.path, "", "")
}

// reinitialize finalizes and initializes the module again so that it
// rescans its tokens. Every session of
// every token is lost; their pools see the generation change and reopen.
// seen is the generation the caller observed: if another goroutine has
// reinitialized since, nothing is done. Callers pace it.
func (m *module) reinitialize(seen uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen.Load() != seen || !m.ownsInit {
		return nil
	}
	_ = m.ctx.Finalize()
	m.gen.Add(1)
	if err := m.ctx.Initialize(); err != nil {
		return wrapErr(err, "reinitialize module "+m.path, "", "")
	}
	return nil
}
