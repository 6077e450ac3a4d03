package pkcs11

import "github.com/offload/offload/providers/pkcs11/uri"

// TokenHealth is what the health probe last saw of a token.
type TokenHealth struct {
	Token      uri.TokenInfo
	Up         bool
	Pending    bool   // configured, not attached yet (Config.AllowMissing)
	Error      string `json:",omitempty"`
	InUse      int    // sessions handed out now
	Idle       int    // sessions open and idle
	Max        int    // pool size
	Recoveries uint64 // times the token was reattached
}

// MechanismCapability is one catalog algorithm a token offers, with the
// mechanism behind it, as `offload providers -v` shows it.
type MechanismCapability struct {
	Token      string
	Algorithm  string
	Mechanism  string
	MinKeySize uint
	MaxKeySize uint
	Hardware   bool // the token set CKF_HW
	Ops        string
}
