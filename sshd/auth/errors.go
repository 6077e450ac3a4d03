package auth

import (
	"errors"
	"fmt"
)

// DisconnectError ends a user authentication conversation. Reason is the
// SSH_MSG_DISCONNECT reason code (wire.Disconnect*) that was sent, or would
// have been sent, to the client; Msg is the text for the client; Err is the
// cause, for logs. Run has already sent the disconnect message when the
// PacketConn implements wire.Disconnector and Sent is true.
type DisconnectError struct {
	Reason uint32
	Msg    string
	Err    error
	Sent   bool
}

func (e *DisconnectError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("auth: disconnect (reason %d): %s", e.Reason, e.Msg)
	}
	return fmt.Sprintf("auth: disconnect (reason %d): %s: %v", e.Reason, e.Msg, e.Err)
}

func (e *DisconnectError) Unwrap() error { return e.Err }

// ConfigError reports an invalid Config field.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("auth: config %s: %s", e.Field, e.Msg) }

// Errors wrapped by DisconnectError.Err, for errors.Is.
var (
	// ErrTooManyFailures: MaxAuthTries failed attempts.
	ErrTooManyFailures = errors.New("auth: too many authentication failures")
	// ErrTooManyRequests: the hard bound on requests of any kind.
	ErrTooManyRequests = errors.New("auth: too many authentication requests")
	// ErrUnexpectedMessage: a message other than the one the protocol
	// allows at this point.
	ErrUnexpectedMessage = errors.New("auth: unexpected message")
	// ErrBadService: a service other than ssh-userauth / ssh-connection.
	ErrBadService = errors.New("auth: service not available")
	// ErrUserChanged: the user or service changed between requests.
	ErrUserChanged = errors.New("auth: user or service changed between requests")
	// ErrIllegalUser: a user name that is too long or not printable UTF-8.
	ErrIllegalUser = errors.New("auth: illegal user name")
)

// ParseError is a malformed message from the client.
type ParseError struct {
	Msg string // which message
	Err error
}

func (e *ParseError) Error() string { return fmt.Sprintf("auth: malformed %s: %v", e.Msg, e.Err) }
func (e *ParseError) Unwrap() error { return e.Err }

// rejectError says why a key, certificate or password was not accepted.
// It is logged, never sent to the client.
type rejectError struct {
	why string
	err error
}

func (e *rejectError) Error() string {
	if e.err == nil {
		return "auth: " + e.why
	}
	return "auth: " + e.why + ": " + e.err.Error()
}

func (e *rejectError) Unwrap() error { return e.err }

func reject(why string) error { return &rejectError{why: why} }

func rejectf(err error, format string, args ...any) error {
	return &rejectError{why: fmt.Sprintf(format, args...), err: err}
}
