//go:build cgo && !nopkcs11

package pkcs11

import "github.com/miekg/pkcs11"

// api is the part of the PKCS #11 function table offload calls. The
// module's *pkcs11.Ctx implements it; a FaultInjector wraps it.
type api interface {
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

var _ api = (*pkcs11.Ctx)(nil)

// PKCS #11 v3.0 names that miekg/pkcs11 v1.1 does not define.
const (
	ckmECEdwardsKeyPairGen = 0x1055 // CKM_EC_EDWARDS_KEY_PAIR_GEN
	ckmEDDSA               = 0x1057 // CKM_EDDSA
	ckkECEdwards           = 0x40   // CKK_EC_EDWARDS
)

// testHooks let tests wrap the module's function table (benchmarks
// replace the token's work with no-ops).
type testHooks struct {
	wrap func(api) api
}
