//go:build cgo && !nopkcs11

package pkcs11

import (
	"github.com/miekg/pkcs11"

	"github.com/offload/offload/internal/pkcs11faults"
)

// api is the part of the PKCS #11 function table offload calls, declared
// once in pkcs11faults (whose Injector wraps it). The module's
// *pkcs11.Ctx implements it.
type api = pkcs11faults.API

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
