//go:build !cgo || nopam

package pam

import "context"

// Available reports whether this build has PAM.
const Available = false

// Handle is one PAM transaction; in this build every method fails with
// ErrUnavailable.
type Handle struct{}

func unavailable(op string) error {
	return &Error{Op: op, Text: ErrUnavailable.Error(), Err: ErrUnavailable}
}

// Start fails with ErrUnavailable: this build has no PAM.
func Start(cfg Config, user string, items Items) (*Handle, error) { return nil, unavailable("start") }

// Authenticate fails with ErrUnavailable.
func (h *Handle) Authenticate(context.Context, Conversation, AuthFlags) error {
	return unavailable("authenticate")
}

// AcctMgmt fails with ErrUnavailable.
func (h *Handle) AcctMgmt(context.Context, Conversation, AuthFlags) error {
	return unavailable("acct_mgmt")
}

// ChangeExpiredAuthTok fails with ErrUnavailable.
func (h *Handle) ChangeExpiredAuthTok(context.Context, Conversation) error {
	return unavailable("chauthtok")
}

// SetCred fails with ErrUnavailable.
func (h *Handle) SetCred(context.Context, Conversation, bool) error { return unavailable("setcred") }

// SetTTY fails with ErrUnavailable.
func (h *Handle) SetTTY(string) error { return unavailable("set_item") }

// OpenSession fails with ErrUnavailable.
func (h *Handle) OpenSession(context.Context, Conversation) error {
	return unavailable("open_session")
}

// CloseSession fails with ErrUnavailable.
func (h *Handle) CloseSession(context.Context, Conversation) error {
	return unavailable("close_session")
}

// Env fails with ErrUnavailable.
func (h *Handle) Env() (map[string]string, error) { return nil, unavailable("getenvlist") }

// PutEnv fails with ErrUnavailable.
func (h *Handle) PutEnv(string) error { return unavailable("putenv") }

// User fails with ErrUnavailable.
func (h *Handle) User() (string, error) { return "", unavailable("get_item") }

// End does nothing.
func (h *Handle) End() error { return nil }
