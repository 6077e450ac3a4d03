package pkcs11

import (
	"errors"
	"fmt"
	"strings"

	"github.com/offload/offload/provider"
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
	ClassNotFound          // no token or object matches what was asked: not retried
	ClassClosed            // the provider was closed: nothing reaches the module any more
)

var classNames = [...]string{"ok", "session", "handle", "device", "login", "pin", "input", "unsupported", "busy", "other",
	"not-found", "closed"}

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

// Sentinel errors, matched with errors.Is. ErrNotFound also matches
// provider.ErrNotFound, ErrTokenUnavailable provider.ErrUnavailable, and
// ErrClosed is provider.ErrClosed.
var (
	// ErrNotBuilt: this binary was built without cgo (or with the nopkcs11
	// tag), so PKCS #11 modules cannot be loaded.
	ErrNotBuilt = errors.New("pkcs11: offload was built without cgo (or with the nopkcs11 tag); rebuild with CGO_ENABLED=1 to use PKCS #11 tokens")
	// ErrTokenUnavailable: the token is known but cannot be reached now:
	// removed, failing, or configured and not present yet.
	ErrTokenUnavailable error = &sentinel{"token unavailable", provider.ErrUnavailable}
	// ErrNotFound: no token or object matches a URI.
	ErrNotFound error = &sentinel{"not found", provider.ErrNotFound}
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
	// ErrClosed: the provider was closed.
	ErrClosed = provider.ErrClosed
)

// ModuleError reports a module that could not be found, loaded or
// initialized. It matches provider.ErrUnavailable: a program may start
// without the module when nothing it must have lives in a token.
type ModuleError struct {
	Module string // path or name, as given
	Err    error
}

func (e *ModuleError) Error() string {
	return "pkcs11: module " + e.Module + ": " + strings.TrimPrefix(e.Err.Error(), "pkcs11: ")
}

func (e *ModuleError) Unwrap() error { return e.Err }

// Is matches provider.ErrUnavailable.
func (e *ModuleError) Is(target error) bool { return target == provider.ErrUnavailable }

// errPending marks the error of a token that is configured but not
// attached.
var errPending = errors.New("configured but not present")

// sentinel is an error that also matches a provider package sentinel.
type sentinel struct {
	msg  string
	also error
}

func (s *sentinel) Error() string        { return s.msg }
func (s *sentinel) Is(target error) bool { return target == s.also }

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
	inner := ""
	if e.Err != nil && (e.Name == "" || !errors.Is(e.Err, errModule)) {
		inner = strings.TrimPrefix(e.Err.Error(), "pkcs11: ")
	}
	s := "pkcs11: " + e.Op
	if e.What != "" && !strings.Contains(inner, e.What) {
		s += " " + e.What
	}
	if on := fmt.Sprintf(" on token %q", e.Token); e.Token != "" && !strings.Contains(inner, on) {
		s += on
	}
	if e.Name != "" {
		s += ": " + e.Name
	}
	if hint := classHint(e); hint != "" && !strings.Contains(inner, hint) {
		s += " (" + hint + ")"
	}
	if inner != "" {
		s += ": " + inner
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is match an *Error against the sentinel of its class.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrPINRejected:
		return e.Class == ClassPIN
	case ErrTokenUnavailable, provider.ErrUnavailable:
		return e.Class == ClassDevice
	case ErrUnsupported:
		return e.Class == ClassUnsupported
	case ErrNotFound, provider.ErrNotFound:
		return e.Class == ClassNotFound
	case provider.ErrClosed:
		return e.Class == ClassClosed
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
		if errors.Is(e.Err, errPending) {
			return "the token is configured but not attached; it is attached when it appears"
		}
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
