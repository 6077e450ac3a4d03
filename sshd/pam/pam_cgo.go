//go:build cgo && !nopam

package pam

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	gopam "github.com/msteinert/pam/v2"
)

// Available reports whether this build has PAM.
const Available = true

// Handle is one PAM transaction (pam_start … pam_end) for one user.
// Its methods may be called from one goroutine at a time.
type Handle struct {
	cfg Config
	tx  *gopam.Transaction
	op  *opState // the operation in progress, for the conversation
}

// opState is the conversation state of one operation.
type opState struct {
	ctx  context.Context
	conv Conversation
	n    int
	err  error // why the conversation failed, if it did
}

// handler is the binding's conversation handler; it forwards to the
// operation in progress.
type handler struct{ h *Handle }

func (hd handler) RespondPAM(s gopam.Style, msg string) (string, error) {
	return hd.h.respond(fromStyle(s), msg)
}

func fromStyle(s gopam.Style) Style {
	switch s {
	case gopam.PromptEchoOff:
		return PromptEchoOff
	case gopam.PromptEchoOn:
		return PromptEchoOn
	case gopam.ErrorMsg:
		return ErrorMsg
	case gopam.TextInfo:
		return TextInfo
	}
	return 0 // binary prompts and unknown styles: refused in respond
}

// Start begins a transaction for user with the items set. The caller
// must End it.
func Start(cfg Config, user string, items Items) (*Handle, error) {
	h := &Handle{cfg: cfg}
	var err error
	if cfg.ConfDir != "" {
		h.tx, err = gopam.StartConfDir(cfg.service(), user, handler{h}, cfg.ConfDir)
	} else {
		h.tx, err = gopam.Start(cfg.service(), user, handler{h})
	}
	if err != nil {
		return nil, h.wrap("start", err)
	}
	if err := h.setItems(items); err != nil {
		h.End()
		return nil, err
	}
	return h, nil
}

func (h *Handle) setItems(it Items) error {
	for _, s := range []struct {
		item gopam.Item
		v    string
	}{{gopam.Rhost, it.RemoteHost}, {gopam.Tty, it.TTY}, {gopam.Ruser, it.RemoteUser}} {
		if s.v == "" {
			continue
		}
		if err := h.tx.SetItem(s.item, s.v); err != nil {
			return h.wrap("set_item", err)
		}
	}
	return nil
}

// respond answers one message for the operation in progress.
func (h *Handle) respond(s Style, text string) (string, error) {
	st := h.op
	if st == nil {
		return "", errors.New("pam: conversation outside an operation")
	}
	resp, err := st.answer(s, text, &h.cfg)
	if err != nil && st.err == nil {
		st.err = err
	}
	return resp, err
}

func (st *opState) answer(s Style, text string, cfg *Config) (string, error) {
	if st.n++; st.n > cfg.maxMessages() {
		return "", &ConversationError{fmt.Sprintf("more than %d messages", cfg.maxMessages())}
	}
	if s == 0 {
		return "", &ConversationError{"unsupported message style"}
	}
	if err := st.ctx.Err(); err != nil {
		return "", &ConversationError{"ended: " + context.Cause(st.ctx).Error()}
	}
	if st.conv == nil {
		if s.IsPrompt() {
			return "", &ConversationError{"a prompt in an operation that cannot ask (" + s.String() + ")"}
		}
		return "", nil
	}
	resp, err := st.conv(st.ctx, Message{Style: s, Text: text})
	if err != nil {
		return "", &ConversationError{err.Error()}
	}
	return checkResponse(s, resp, cfg)
}

func checkResponse(s Style, resp string, cfg *Config) (string, error) {
	switch {
	case !s.IsPrompt():
		return "", nil
	case len(resp) > cfg.maxResponse():
		return "", &ConversationError{fmt.Sprintf("response of %d bytes, at most %d", len(resp), cfg.maxResponse())}
	case strings.IndexByte(resp, 0) >= 0:
		return "", &ConversationError{"response contains a NUL byte"}
	}
	return resp, nil
}

// run performs one PAM call with conv as its conversation.
func (h *Handle) run(ctx context.Context, conv Conversation, op string, call func() error) error {
	if h.tx == nil {
		return &Error{Op: op, Text: ErrEnded.Error(), Err: ErrEnded}
	}
	st := &opState{ctx: ctx, conv: conv}
	h.op = st
	err := call()
	h.op = nil
	if err != nil {
		e := h.wrap(op, err).(*Error)
		e.Conv = st.err
		return e
	}
	return nil
}

func authFlags(f AuthFlags) gopam.Flags {
	var g gopam.Flags
	if f&DisallowNullAuthtok != 0 {
		g |= gopam.DisallowNullAuthtok
	}
	if f&Silent != 0 {
		g |= gopam.Silent
	}
	return g
}

// Authenticate runs the auth stack (pam_authenticate).
func (h *Handle) Authenticate(ctx context.Context, conv Conversation, f AuthFlags) error {
	return h.run(ctx, conv, "authenticate", func() error { return h.tx.Authenticate(authFlags(f)) })
}

// AcctMgmt runs the account stack (pam_acct_mgmt). ErrNewAuthtokRequired
// means the login may go on only after ChangeExpiredAuthTok.
func (h *Handle) AcctMgmt(ctx context.Context, conv Conversation, f AuthFlags) error {
	return h.run(ctx, conv, "acct_mgmt", func() error { return h.tx.AcctMgmt(authFlags(f)) })
}

// ChangeExpiredAuthTok runs the password stack for an expired password
// (pam_chauthtok with PAM_CHANGE_EXPIRED_AUTHTOK).
func (h *Handle) ChangeExpiredAuthTok(ctx context.Context, conv Conversation) error {
	return h.run(ctx, conv, "chauthtok", func() error { return h.tx.ChangeAuthTok(gopam.ChangeExpiredAuthtok) })
}

// SetCred establishes (or, with establish false, deletes) credentials
// (pam_setcred).
func (h *Handle) SetCred(ctx context.Context, conv Conversation, establish bool) error {
	f := gopam.DeleteCred
	if establish {
		f = gopam.EstablishCred
	}
	return h.run(ctx, conv, "setcred", func() error { return h.tx.SetCred(f) })
}

// SetTTY sets PAM_TTY (the pty's name, e.g. "/dev/pts/3", before
// OpenSession of a pty session).
func (h *Handle) SetTTY(tty string) error {
	if h.tx == nil {
		return &Error{Op: "set_item", Text: ErrEnded.Error(), Err: ErrEnded}
	}
	return h.wrap("set_item", h.tx.SetItem(gopam.Tty, tty))
}

// OpenSession runs the session stack's open (pam_open_session) in this
// process; see the package documentation for the thread it must run on.
func (h *Handle) OpenSession(ctx context.Context, conv Conversation) error {
	err := h.run(ctx, conv, "open_session", func() error { return h.tx.OpenSession(0) })
	keepNofile()
	return err
}

// keepNofile tells Go's runtime that RLIMIT_NOFILE was set on purpose
// (by pam_limits), so that children keep it.
func keepNofile() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

// CloseSession runs the session stack's close (pam_close_session).
func (h *Handle) CloseSession(ctx context.Context, conv Conversation) error {
	return h.run(ctx, conv, "close_session", func() error { return h.tx.CloseSession(0) })
}

// Env returns the PAM environment (pam_getenvlist): pam_env's variables
// and those other modules set, to give to the user's processes.
func (h *Handle) Env() (map[string]string, error) {
	if h.tx == nil {
		return nil, &Error{Op: "getenvlist", Text: ErrEnded.Error(), Err: ErrEnded}
	}
	m, err := h.tx.GetEnvList()
	if err != nil {
		return nil, h.wrap("getenvlist", err)
	}
	return m, nil
}

// PutEnv sets ("NAME=value") or removes ("NAME") a PAM environment
// variable.
func (h *Handle) PutEnv(nameval string) error {
	if h.tx == nil {
		return &Error{Op: "putenv", Text: ErrEnded.Error(), Err: ErrEnded}
	}
	return h.wrap("putenv", h.tx.PutEnv(nameval))
}

// User returns PAM_USER, which a module may have changed.
func (h *Handle) User() (string, error) {
	if h.tx == nil {
		return "", &Error{Op: "get_item", Text: ErrEnded.Error(), Err: ErrEnded}
	}
	u, err := h.tx.GetItem(gopam.User)
	return u, h.wrap("get_item", err)
}

// End ends the transaction (pam_end). Later calls fail with ErrEnded.
func (h *Handle) End() error {
	if h.tx == nil {
		return nil
	}
	tx := h.tx
	h.tx = nil
	return h.wrap("end", tx.End())
}

// wrap turns the binding's error into an *Error.
func (h *Handle) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op, Text: err.Error()}
	var pe gopam.Error
	if errors.As(err, &pe) {
		e.Code = int(pe)
		e.Err = classes[pe]
	}
	return e
}

var classes = map[gopam.Error]error{
	gopam.ErrAuth:           ErrAuth,
	gopam.ErrUserUnknown:    ErrUserUnknown,
	gopam.ErrMaxtries:       ErrMaxTries,
	gopam.ErrAcctExpired:    ErrAcctExpired,
	gopam.ErrNewAuthtokReqd: ErrNewAuthtokRequired,
	gopam.ErrPermDenied:     ErrPermDenied,
	gopam.ErrConv:           ErrConversation,
	gopam.ErrAuthtokExpired: ErrNewAuthtokRequired,
}
