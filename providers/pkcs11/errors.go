package pkcs11

import (
	"errors"
	"fmt"
)

// Class groups PKCS #11 return values by what recovers from them.
type Class int

const (
	ClassOK          Class = iota
	ClassSession           // the session is gone: open another
	ClassHandle            // an object handle is stale: find the object again
	ClassDevice            // the token or device is gone or broken: reattach, fail over
	ClassLogin             // the token forgot the login: log in again
	ClassPIN               // the PIN is wrong, locked or expired: never retried
	ClassInput             // the request itself is bad (data, signature, arguments)
	ClassUnsupported       // the token does not offer the mechanism or attribute
	ClassBusy              // transient shortage (memory, sessions): retry later
	ClassOther             // anything else: not retried
)

var classNames = [...]string{"ok", "session", "handle", "device", "login", "pin", "input", "unsupported", "busy", "other"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// Retryable reports whether an operation failing with c may succeed if
// repeated after recovery.
func (c Class) Retryable() bool {
	switch c {
	case ClassSession, ClassHandle, ClassDevice, ClassLogin, ClassBusy:
		return true
	}
	return false
}

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotBuilt: this binary was built without cgo (or with the nopkcs11
	// tag), so PKCS #11 modules cannot be loaded.
	ErrNotBuilt = errors.New("pkcs11: offload was built without cgo (or with the nopkcs11 tag); rebuild with CGO_ENABLED=1 to use PKCS #11 tokens")
	// ErrTokenUnavailable: the token is gone and did not come back.
	ErrTokenUnavailable = errors.New("token unavailable")
	// ErrNotFound: no token or object matches a URI.
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous: more than one token or object matches a URI that must
	// name one.
	ErrAmbiguous = errors.New("ambiguous")
	// ErrPINRejected: the token refused the PIN; it is not tried again.
	ErrPINRejected = errors.New("PIN rejected")
	// ErrPoolExhausted: every session of a token stayed busy for the
	// whole wait timeout.
	ErrPoolExhausted = errors.New("session pool exhausted")
	// ErrUnsupported: the token does not offer what was asked.
	ErrUnsupported = errors.New("unsupported")
)

// Error is a failed PKCS #11 operation: what was asked, of which token,
// the return value and its class.
type Error struct {
	Op    string // "sign", "login", "open session", ...
	Token string // the token's label, when known
	What  string // the key or object asked for, when any (a URI, redacted)
	Class Class
	Code  uint   // CKR_* value; 0 when the error is not from the module
	Name  string // "CKR_PIN_INCORRECT"
	Err   error  // underlying error, if any
}

func (e *Error) Error() string {
	s := "pkcs11: " + e.Op
	if e.What != "" {
		s += " " + e.What
	}
	if e.Token != "" {
		s += fmt.Sprintf(" on token %q", e.Token)
	}
	if e.Name != "" {
		s += ": " + e.Name
	}
	if hint := classHint(e); hint != "" {
		s += " (" + hint + ")"
	}
	if e.Err != nil && (e.Name == "" || !errors.Is(e.Err, errModule)) {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is match an *Error against the sentinel of its class.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrPINRejected:
		return e.Class == ClassPIN
	case ErrTokenUnavailable:
		return e.Class == ClassDevice
	case ErrUnsupported:
		return e.Class == ClassUnsupported
	}
	return false
}

// errModule marks errors that came from the module itself.
var errModule = errors.New("module error")

func classHint(e *Error) string {
	switch e.Class {
	case ClassPIN:
		return "the PIN is not tried again: tokens lock after a few wrong PINs"
	case ClassDevice:
		return "the token is gone or failing"
	case ClassUnsupported:
		return "the token does not offer this"
	}
	return ""
}

// ClassOf returns the class of err: that of the first *Error in its chain,
// ClassOK for nil, ClassOther otherwise.
func ClassOf(err error) Class {
	if err == nil {
		return ClassOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassOther
}
