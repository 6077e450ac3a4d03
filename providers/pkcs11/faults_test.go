//go:build cgo && !nopkcs11

package pkcs11

import (
	"sync"

	"github.com/miekg/pkcs11"
)

// faults wraps a module's function table, counts calls and makes chosen
// functions fail with chosen CKR_* values a chosen number of times.
type faults struct {
	mu       sync.Mutex
	calls    map[string]int
	rules    []*faultRule
	sessSlot map[pkcs11.SessionHandle]uint
}

type faultRule struct {
	fn    string
	code  uint
	times int   // < 0: always
	slot  *uint // nil: every slot
}

func (f *faults) hooks() *testHooks {
	return &testHooks{wrap: func(a api) api { return &faultAPI{api: a, f: f} }}
}

// inject makes fn fail with code the next times calls (times < 0: always).
func (f *faults) inject(fn string, code uint, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &faultRule{fn: fn, code: code, times: times})
}

// injectSlot is inject for calls on one slot only.
func (f *faults) injectSlot(slot uint, fn string, code uint, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &faultRule{fn: fn, code: code, times: times, slot: &slot})
}

// clear removes every rule.
func (f *faults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

func (f *faults) count(fn string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[fn]
}

func (f *faults) hit(fn string) error { return f.hitSlot(fn, nil) }

func (f *faults) hitSession(fn string, h pkcs11.SessionHandle) error {
	f.mu.Lock()
	slot, ok := f.sessSlot[h]
	f.mu.Unlock()
	if !ok {
		return f.hitSlot(fn, nil)
	}
	return f.hitSlot(fn, &slot)
}

func (f *faults) hitSlot(fn string, slot *uint) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[fn]++
	for _, r := range f.rules {
		if r.slot != nil && (slot == nil || *slot != *r.slot) {
			continue
		}
		if r.fn == fn && r.times != 0 {
			if r.times > 0 {
				r.times--
			}
			return pkcs11.Error(r.code)
		}
	}
	return nil
}

type faultAPI struct {
	api
	f *faults
}

func (x *faultAPI) GetTokenInfo(slot uint) (pkcs11.TokenInfo, error) {
	if err := x.f.hitSlot("GetTokenInfo", &slot); err != nil {
		return pkcs11.TokenInfo{}, err
	}
	return x.api.GetTokenInfo(slot)
}

func (x *faultAPI) OpenSession(slot, flags uint) (pkcs11.SessionHandle, error) {
	if err := x.f.hitSlot("OpenSession", &slot); err != nil {
		return 0, err
	}
	h, err := x.api.OpenSession(slot, flags)
	if err == nil {
		x.f.mu.Lock()
		if x.f.sessSlot == nil {
			x.f.sessSlot = map[pkcs11.SessionHandle]uint{}
		}
		x.f.sessSlot[h] = slot
		x.f.mu.Unlock()
	}
	return h, err
}

func (x *faultAPI) Login(sh pkcs11.SessionHandle, userType uint, pin string) error {
	if err := x.f.hitSession("Login", sh); err != nil {
		return err
	}
	return x.api.Login(sh, userType, pin)
}

func (x *faultAPI) SignInit(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error {
	if err := x.f.hitSession("SignInit", sh); err != nil {
		return err
	}
	return x.api.SignInit(sh, m, o)
}

func (x *faultAPI) Sign(sh pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	if err := x.f.hitSession("Sign", sh); err != nil {
		_, _ = x.api.Sign(sh, msg) // a failed call ends the operation, as the standard says
		return nil, err
	}
	return x.api.Sign(sh, msg)
}

func (x *faultAPI) EncryptInit(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error {
	if err := x.f.hitSession("EncryptInit", sh); err != nil {
		return err
	}
	return x.api.EncryptInit(sh, m, o)
}

func (x *faultAPI) Encrypt(sh pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	if err := x.f.hitSession("Encrypt", sh); err != nil {
		_, _ = x.api.Encrypt(sh, msg) // a failed call ends the operation, as the standard says
		return nil, err
	}
	return x.api.Encrypt(sh, msg)
}

func (x *faultAPI) Decrypt(sh pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	if err := x.f.hitSession("Decrypt", sh); err != nil {
		_, _ = x.api.Decrypt(sh, msg) // a failed call ends the operation, as the standard says
		return nil, err
	}
	return x.api.Decrypt(sh, msg)
}

func (x *faultAPI) CreateObject(sh pkcs11.SessionHandle, temp []*pkcs11.Attribute) (pkcs11.ObjectHandle, error) {
	if err := x.f.hitSession("CreateObject", sh); err != nil {
		return 0, err
	}
	return x.api.CreateObject(sh, temp)
}

func (x *faultAPI) GenerateKeyPair(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, pub, priv []*pkcs11.Attribute) (pkcs11.ObjectHandle, pkcs11.ObjectHandle, error) {
	if err := x.f.hitSession("GenerateKeyPair", sh); err != nil {
		return 0, 0, err
	}
	return x.api.GenerateKeyPair(sh, m, pub, priv)
}

func (x *faultAPI) DeriveKey(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, base pkcs11.ObjectHandle, a []*pkcs11.Attribute) (pkcs11.ObjectHandle, error) {
	if err := x.f.hitSession("DeriveKey", sh); err != nil {
		return 0, err
	}
	return x.api.DeriveKey(sh, m, base, a)
}

func (x *faultAPI) FindObjectsInit(sh pkcs11.SessionHandle, temp []*pkcs11.Attribute) error {
	if err := x.f.hitSession("FindObjectsInit", sh); err != nil {
		return err
	}
	return x.api.FindObjectsInit(sh, temp)
}

func (x *faultAPI) GetMechanismList(slot uint) ([]*pkcs11.Mechanism, error) {
	if err := x.f.hit("GetMechanismList"); err != nil {
		return nil, err
	}
	return x.api.GetMechanismList(slot)
}
