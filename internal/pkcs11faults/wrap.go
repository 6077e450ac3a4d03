//go:build cgo && !nopkcs11

package pkcs11faults

import "github.com/miekg/pkcs11"

// API is the part of the PKCS #11 function table offload's provider
// calls (providers/pkcs11 names it api). The module's *pkcs11.Ctx
// implements it; Injector.Wrap wraps it.
type API interface {
	GetInfo() (pkcs11.Info, error)
	GetSlotList(tokenPresent bool) ([]uint, error)
	GetSlotInfo(slotID uint) (pkcs11.SlotInfo, error)
	GetTokenInfo(slotID uint) (pkcs11.TokenInfo, error)
	GetMechanismList(slotID uint) ([]*pkcs11.Mechanism, error)
	GetMechanismInfo(slotID uint, m []*pkcs11.Mechanism) (pkcs11.MechanismInfo, error)
	OpenSession(slotID uint, flags uint) (pkcs11.SessionHandle, error)
	CloseSession(sh pkcs11.SessionHandle) error
	GetSessionInfo(sh pkcs11.SessionHandle) (pkcs11.SessionInfo, error)
	Login(sh pkcs11.SessionHandle, userType uint, pin string) error
	CreateObject(sh pkcs11.SessionHandle, temp []*pkcs11.Attribute) (pkcs11.ObjectHandle, error)
	DestroyObject(sh pkcs11.SessionHandle, oh pkcs11.ObjectHandle) error
	GetAttributeValue(sh pkcs11.SessionHandle, o pkcs11.ObjectHandle, a []*pkcs11.Attribute) ([]*pkcs11.Attribute, error)
	FindObjectsInit(sh pkcs11.SessionHandle, temp []*pkcs11.Attribute) error
	FindObjects(sh pkcs11.SessionHandle, max int) ([]pkcs11.ObjectHandle, bool, error)
	FindObjectsFinal(sh pkcs11.SessionHandle) error
	EncryptInit(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error
	Encrypt(sh pkcs11.SessionHandle, message []byte) ([]byte, error)
	DecryptInit(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error
	Decrypt(sh pkcs11.SessionHandle, cipher []byte) ([]byte, error)
	SignInit(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error
	Sign(sh pkcs11.SessionHandle, message []byte) ([]byte, error)
	GenerateKeyPair(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, public, private []*pkcs11.Attribute) (pkcs11.ObjectHandle, pkcs11.ObjectHandle, error)
	DeriveKey(sh pkcs11.SessionHandle, m []*pkcs11.Mechanism, basekey pkcs11.ObjectHandle, a []*pkcs11.Attribute) (pkcs11.ObjectHandle, error)
}

var _ API = (*pkcs11.Ctx)(nil)

// wrapper calls the module through an Injector.
type wrapper struct {
	a API
	f *Injector
}

var _ API = (*wrapper)(nil)

// Wrap returns a that calls the module through f.
func (f *Injector) Wrap(a API) API { return &wrapper{a: a, f: f} }

// slotErr and sessErr return the injected error for a call, or nil.
func (x *wrapper) slotErr(fn int, slot uint) error { return ckrErr(x.f.before(fn, slot, true)) }

func (x *wrapper) sessErr(fn int, h pkcs11.SessionHandle) error {
	return ckrErr(x.f.beforeSession(fn, uint(h)))
}

func ckrErr(code uint) error {
	if code == 0 {
		return nil
	}
	return pkcs11.Error(code)
}

func (x *wrapper) GetInfo() (pkcs11.Info, error) {
	if err := ckrErr(x.f.before(fnGetInfo, 0, false)); err != nil {
		return pkcs11.Info{}, err
	}
	return x.a.GetInfo()
}

func (x *wrapper) GetSlotList(present bool) ([]uint, error) {
	if err := ckrErr(x.f.before(fnGetSlotList, 0, false)); err != nil {
		return nil, err
	}
	return x.a.GetSlotList(present)
}

func (x *wrapper) GetSlotInfo(slot uint) (pkcs11.SlotInfo, error) {
	if err := x.slotErr(fnGetSlotInfo, slot); err != nil {
		return pkcs11.SlotInfo{}, err
	}
	return x.a.GetSlotInfo(slot)
}

func (x *wrapper) GetTokenInfo(slot uint) (pkcs11.TokenInfo, error) {
	if err := x.slotErr(fnGetTokenInfo, slot); err != nil {
		return pkcs11.TokenInfo{}, err
	}
	return x.a.GetTokenInfo(slot)
}

func (x *wrapper) GetMechanismList(slot uint) ([]*pkcs11.Mechanism, error) {
	if err := x.slotErr(fnGetMechanismList, slot); err != nil {
		return nil, err
	}
	return x.a.GetMechanismList(slot)
}

func (x *wrapper) GetMechanismInfo(slot uint, m []*pkcs11.Mechanism) (pkcs11.MechanismInfo, error) {
	if err := x.slotErr(fnGetMechanismInfo, slot); err != nil {
		return pkcs11.MechanismInfo{}, err
	}
	return x.a.GetMechanismInfo(slot, m)
}

func (x *wrapper) OpenSession(slot, flags uint) (pkcs11.SessionHandle, error) {
	if err := x.slotErr(fnOpenSession, slot); err != nil {
		return 0, err
	}
	h, err := x.a.OpenSession(slot, flags)
	if err == nil {
		x.f.opened(uint(h), slot)
	}
	return h, err
}

// CloseSession closes the session even when it reports a fault: the
// handle is gone either way.
func (x *wrapper) CloseSession(h pkcs11.SessionHandle) error {
	ferr := x.sessErr(fnCloseSession, h)
	err := x.a.CloseSession(h)
	x.f.closed(uint(h))
	if ferr != nil {
		return ferr
	}
	return err
}

func (x *wrapper) GetSessionInfo(h pkcs11.SessionHandle) (pkcs11.SessionInfo, error) {
	if err := x.sessErr(fnGetSessionInfo, h); err != nil {
		return pkcs11.SessionInfo{}, err
	}
	return x.a.GetSessionInfo(h)
}

func (x *wrapper) Login(h pkcs11.SessionHandle, userType uint, pin string) error {
	if err := x.sessErr(fnLogin, h); err != nil {
		return err
	}
	return x.a.Login(h, userType, pin)
}

func (x *wrapper) CreateObject(h pkcs11.SessionHandle, temp []*pkcs11.Attribute) (pkcs11.ObjectHandle, error) {
	if err := x.sessErr(fnCreateObject, h); err != nil {
		return 0, err
	}
	return x.a.CreateObject(h, temp)
}

func (x *wrapper) DestroyObject(h pkcs11.SessionHandle, o pkcs11.ObjectHandle) error {
	if err := x.sessErr(fnDestroyObject, h); err != nil {
		return err
	}
	return x.a.DestroyObject(h, o)
}

func (x *wrapper) GetAttributeValue(h pkcs11.SessionHandle, o pkcs11.ObjectHandle, a []*pkcs11.Attribute) ([]*pkcs11.Attribute, error) {
	if err := x.sessErr(fnGetAttributeValue, h); err != nil {
		return nil, err
	}
	return x.a.GetAttributeValue(h, o, a)
}

func (x *wrapper) FindObjectsInit(h pkcs11.SessionHandle, temp []*pkcs11.Attribute) error {
	if err := x.sessErr(fnFindObjectsInit, h); err != nil {
		return err
	}
	return x.a.FindObjectsInit(h, temp)
}

func (x *wrapper) FindObjects(h pkcs11.SessionHandle, max int) ([]pkcs11.ObjectHandle, bool, error) {
	if err := x.sessErr(fnFindObjects, h); err != nil {
		return nil, false, err
	}
	return x.a.FindObjects(h, max)
}

func (x *wrapper) FindObjectsFinal(h pkcs11.SessionHandle) error {
	ferr := x.sessErr(fnFindObjectsFinal, h)
	if err := x.a.FindObjectsFinal(h); ferr == nil {
		return err
	}
	return ferr
}

func (x *wrapper) EncryptInit(h pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error {
	if err := x.sessErr(fnEncryptInit, h); err != nil {
		return err
	}
	return x.a.EncryptInit(h, m, o)
}

// Encrypt, Decrypt and Sign reach the module even when they report a
// fault: a failed call ends the operation, as the standard says.
func (x *wrapper) Encrypt(h pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	ferr := x.sessErr(fnEncrypt, h)
	out, err := x.a.Encrypt(h, msg)
	if ferr != nil {
		return nil, ferr
	}
	return out, err
}

func (x *wrapper) DecryptInit(h pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error {
	if err := x.sessErr(fnDecryptInit, h); err != nil {
		return err
	}
	return x.a.DecryptInit(h, m, o)
}

func (x *wrapper) Decrypt(h pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	ferr := x.sessErr(fnDecrypt, h)
	out, err := x.a.Decrypt(h, msg)
	if ferr != nil {
		return nil, ferr
	}
	return out, err
}

func (x *wrapper) SignInit(h pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error {
	if err := x.sessErr(fnSignInit, h); err != nil {
		return err
	}
	return x.a.SignInit(h, m, o)
}

func (x *wrapper) Sign(h pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	ferr := x.sessErr(fnSign, h)
	sig, err := x.a.Sign(h, msg)
	if ferr != nil {
		return nil, ferr
	}
	return sig, err
}

func (x *wrapper) GenerateKeyPair(h pkcs11.SessionHandle, m []*pkcs11.Mechanism, pub, priv []*pkcs11.Attribute) (pkcs11.ObjectHandle, pkcs11.ObjectHandle, error) {
	if err := x.sessErr(fnGenerateKeyPair, h); err != nil {
		return 0, 0, err
	}
	return x.a.GenerateKeyPair(h, m, pub, priv)
}

func (x *wrapper) DeriveKey(h pkcs11.SessionHandle, m []*pkcs11.Mechanism, base pkcs11.ObjectHandle, a []*pkcs11.Attribute) (pkcs11.ObjectHandle, error) {
	if err := x.sessErr(fnDeriveKey, h); err != nil {
		return 0, err
	}
	return x.a.DeriveKey(h, m, base, a)
}
