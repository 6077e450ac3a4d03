package pam

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// DefaultService is the PAM service name used when Config.Service is
// empty, as OpenSSH's.
const DefaultService = "sshd"

// Bounds used for zero Config fields.
const (
	// DefaultMaxResponseLen bounds one response (OpenSSH's password bound).
	DefaultMaxResponseLen = 1024
	// DefaultMaxMessages bounds the messages of one operation.
	DefaultMaxMessages = 64
)

// Config selects the PAM service. The zero value is the "sshd" service
// from /etc/pam.d with the default bounds.
type Config struct {
	// Service is the PAM service name ("" means DefaultService).
	Service string
	// ConfDir, when set, is the directory holding the service file
	// instead of /etc/pam.d (pam_start_confdir, Linux-PAM 1.4 and later).
	ConfDir string
	// MaxResponseLen bounds each response; a longer one fails the
	// conversation (0 means DefaultMaxResponseLen).
	MaxResponseLen int
	// MaxMessages bounds the messages of one operation (0 means
	// DefaultMaxMessages).
	MaxMessages int
}

func (c *Config) service() string {
	if c.Service == "" {
		return DefaultService
	}
	return c.Service
}

func (c *Config) maxResponse() int {
	if c.MaxResponseLen <= 0 {
		return DefaultMaxResponseLen
	}
	return c.MaxResponseLen
}

func (c *Config) maxMessages() int {
	if c.MaxMessages <= 0 {
		return DefaultMaxMessages
	}
	return c.MaxMessages
}

// Style is the kind of a conversation message.
type Style int

// Message styles, as PAM's PAM_PROMPT_ECHO_OFF and so on.
const (
	PromptEchoOff Style = iota + 1 // a secret: do not echo the answer
	PromptEchoOn                   // a question whose answer may be echoed
	ErrorMsg                       // a text to show, no answer
	TextInfo                       // a text to show, no answer
)

func (s Style) String() string {
	switch s {
	case PromptEchoOff:
		return "prompt-echo-off"
	case PromptEchoOn:
		return "prompt-echo-on"
	case ErrorMsg:
		return "error"
	case TextInfo:
		return "info"
	}
	return fmt.Sprintf("style(%d)", int(s))
}

// IsPrompt reports whether a message of this style wants an answer.
func (s Style) IsPrompt() bool { return s == PromptEchoOff || s == PromptEchoOn }

// Message is one message from a PAM module.
type Message struct {
	Style Style
	Text  string
}

// Conversation answers one message: the response to a prompt, "" for a
// text. An error fails the conversation (the module sees PAM_CONV_ERR).
// It is called on the goroutine that runs the operation, with that
// operation's context.
type Conversation func(ctx context.Context, m Message) (string, error)

// Errors, for errors.Is on an *Error.
var (
	// ErrUnavailable: this build has no PAM (cgo off or the nopam tag).
	ErrUnavailable = errors.New("pam: not in this build: build with cgo (CGO_ENABLED=1, libpam0g-dev installed) and without the nopam tag, or set UsePAM no")
	// ErrAuth: authentication failed (wrong password, PAM_AUTH_ERR).
	ErrAuth = errors.New("pam: authentication failure")
	// ErrUserUnknown: the module does not know the user.
	ErrUserUnknown = errors.New("pam: user unknown")
	// ErrMaxTries: a module's retry count is exhausted.
	ErrMaxTries = errors.New("pam: maximum number of tries exceeded")
	// ErrAcctExpired: the account has expired.
	ErrAcctExpired = errors.New("pam: account expired")
	// ErrNewAuthtokRequired: the password has expired and must be
	// changed (ChangeExpiredAuthTok) before the login may go on.
	ErrNewAuthtokRequired = errors.New("pam: new authentication token required")
	// ErrPermDenied: the account may not log in now (pam_nologin,
	// pam_access, ...).
	ErrPermDenied = errors.New("pam: permission denied")
	// ErrConversation: the conversation failed (timeout, a bound, or the
	// Conversation's error).
	ErrConversation = errors.New("pam: conversation failed")
	// ErrEnded: the handle was ended.
	ErrEnded = errors.New("pam: transaction ended")
)

// Error is a failed PAM operation.
type Error struct {
	Op   string // "authenticate", "acct_mgmt", "open_session", ...
	Text string // pam_strerror's text
	Code int    // the PAM return code (0 when not from PAM)
	Err  error  // one of the Err* values above, or nil for other codes
	// Conv is the conversation's own error when it caused the failure.
	Conv error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pam: %s: %s", e.Op, e.Text)
	if e.Conv != nil {
		fmt.Fprintf(&b, " (conversation: %v)", e.Conv)
	}
	return b.String()
}

// Unwrap returns the class error and the conversation's error.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.Conv != nil {
		errs = append(errs, e.Conv)
	}
	return errs
}

// ConversationError says why a conversation failed.
type ConversationError struct{ Why string }

func (e *ConversationError) Error() string   { return "pam: conversation: " + e.Why }
func (e *ConversationError) Is(t error) bool { return t == ErrConversation }

// AuthFlags modify Authenticate.
type AuthFlags int

// Authenticate flags.
const (
	// DisallowNullAuthtok fails accounts with an empty password
	// (PAM_DISALLOW_NULL_AUTHTOK: PermitEmptyPasswords no).
	DisallowNullAuthtok AuthFlags = 1 << iota
	// Silent asks modules not to send texts (PAM_SILENT).
	Silent
)

// Items are the PAM items Start sets (PAM_RHOST, PAM_TTY, PAM_RUSER).
// OpenSSH sets RemoteHost to the client's address (or name with UseDNS)
// and TTY to "ssh" until a pty is allocated.
type Items struct {
	RemoteHost string
	TTY        string
	RemoteUser string
}
