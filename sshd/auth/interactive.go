package auth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/offload/offload/sshd/account"
	"github.com/offload/offload/sshd/pam"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// incorrectPassword is what PAM is given for users that may not log in,
// so that they cost what real ones do and can never succeed (OpenSSH's
// choice of string, which no password can be).
const incorrectPassword = "\b\n\r\177INCORRECT"

// password handles the "password" method (RFC 4252 §8). Password
// changes are refused, as in OpenSSH.
func (s *decider) password(ctx context.Context, req *Request) (outcome, *perm.Permissions) {
	switch {
	case !s.cfg.PasswordAuthentication:
		return s.fail(req, reject("password authentication disabled")), nil
	case req.ChangePassword:
		s.logf(s.log.Info, "password change not supported")
		return s.fail(req, reject("password change requested")), nil
	case !utf8.ValidString(req.Password):
		return s.fail(req, reject("password is not UTF-8 (RFC 4252 section 8)")), nil
	}
	ok := s.checkPassword(ctx, req.Password)
	if err := s.allowedAfterCheck(methodPassword); err != nil {
		return s.fail(req, err), nil
	}
	if !ok {
		return s.fail(req, reject("wrong password")), nil
	}
	return succeeded, &perm.Permissions{User: s.user, Method: methodPassword}
}

// none answers the "none" method: a failure (not counted when it is the
// first request), except that the first "none" logs in an account whose
// password is empty when PermitEmptyPasswords and PasswordAuthentication
// allow empty passwords and AuthenticationMethods names no lists or one
// that starts with "none", as OpenSSH's does (its clients send "none" first, and log in
// so without asking for a password).
func (s *decider) none(ctx context.Context) (outcome, *perm.Permissions) {
	fail := failed
	if s.requests == 1 {
		fail = failedUncounted
	}
	first := !s.noneTried
	s.noneTried = true
	if !first || !s.cfg.PermitEmptyPasswords || !s.cfg.PasswordAuthentication || !s.prog.allowed(methodNone) {
		return fail, nil
	}
	ok := s.checkPassword(ctx, "")
	if err := s.allowedAfterCheck(methodPassword); err != nil || !ok {
		return fail, nil
	}
	return succeeded, &perm.Permissions{User: s.user, Method: methodNone}
}

// allowedAfterCheck refuses accounts that may not log in, or not by
// method; the password was checked first so that they cost the same.
func (s *decider) allowedAfterCheck(method string) error {
	if s.acct.denied != nil {
		return s.acct.denied
	}
	return s.cfg.rootAllows(s.acct, method, false)
}

// checkPassword checks pw with the configured backend.
func (s *decider) checkPassword(ctx context.Context, pw string) bool {
	switch {
	case s.cfg.PasswordCallback != nil:
		if s.acct.denied != nil {
			return false
		}
		ok, err := s.cfg.PasswordCallback(s.user, pw)
		return err == nil && ok
	case s.cfg.UsePAM:
		return s.pamPassword(ctx, pw)
	}
	return s.shadowPassword(pw)
}

// shadowPassword checks pw against the shadow entry, and the password's
// age as OpenSSH does at password authentication.
func (s *decider) shadowPassword(pw string) bool {
	a := s.acct.sys
	if s.acct.denied != nil {
		a = nil
	}
	ok, err := account.VerifyPassword(a, pw, s.cfg.PermitEmptyPasswords)
	if err != nil {
		s.log.Error("auth: password check unavailable", "err", err)
		return false
	}
	if ok {
		if e := s.cfg.policy().CheckPasswordExpiry(a); e.Expired {
			s.logf(s.log.Info, "%s", e.Log)
			s.pwExpired = true
		}
	}
	return ok
}

// pamHandle starts the connection's PAM transaction on first use.
func (s *decider) pamHandle() (*pam.Handle, error) {
	if s.pamh != nil {
		return s.pamh, nil
	}
	h, err := pam.Start(s.cfg.PAM, s.user, pam.Items{RemoteHost: s.addr.String(), TTY: "ssh"})
	if err != nil {
		s.log.Error("auth: PAM unavailable", "err", err)
		return nil, err
	}
	s.pamh = h
	return h, nil
}

func (s *decider) pamFlags() pam.AuthFlags {
	if s.cfg.PermitEmptyPasswords {
		return 0
	}
	return pam.DisallowNullAuthtok
}

// pamPassword runs PAM's auth stack with pw as the answer to its one
// password prompt (OpenSSH's sshpam_auth_passwd).
func (s *decider) pamPassword(ctx context.Context, pw string) bool {
	h, err := s.pamHandle()
	if err != nil {
		return false
	}
	if s.acct.denied != nil {
		pw = incorrectPassword
	}
	asked := false
	conv := func(_ context.Context, m pam.Message) (string, error) {
		switch {
		case !m.Style.IsPrompt():
			return "", nil
		case m.Style == pam.PromptEchoOff && !asked:
			asked = true
			return pw, nil
		}
		return "", errors.New("the password method answers one hidden prompt only")
	}
	ctx, cancel := s.cfg.withGrace(ctx)
	defer cancel()
	if err := h.Authenticate(ctx, conv, s.pamFlags()); err != nil {
		s.log.Debug("auth: PAM authentication failed", "user", s.user, "err", err)
		return false
	}
	return true
}

// kbdRound is a keyboard-interactive attempt in progress.
type kbdRound struct {
	challenge *Challenge  // the prompts sent, awaiting INFO_RESPONSE
	dialog    *pam.Dialog // with PAM; nil for the password prompt
	cancel    context.CancelFunc
	answered  bool // PAM's account stack ran inside the dialog
}

// kbdInt handles "keyboard-interactive" (RFC 4256): PAM's conversation
// with UsePAM, otherwise one password prompt.
func (s *decider) kbdInt(ctx context.Context, req *Request) (outcome, *perm.Permissions) {
	if !s.cfg.KbdInteractiveAuthentication {
		return s.fail(req, reject("keyboard-interactive authentication disabled")), nil
	}
	if !s.cfg.UsePAM {
		s.kbd = &kbdRound{challenge: &Challenge{Prompts: []Prompt{{Text: "Password: "}}}}
		return asking, nil
	}
	h, err := s.pamHandle()
	if err != nil {
		return s.fail(req, err), nil
	}
	dctx, cancel := s.cfg.withGrace(context.Background())
	k := &kbdRound{cancel: cancel}
	k.dialog = pam.StartDialog(dctx, func(ctx context.Context, conv pam.Conversation) error {
		return s.pamKbdOp(ctx, h, conv, k)
	})
	s.kbd = k
	return s.kbdNext(ctx)
}

// pamKbdOp is the dialog of keyboard-interactive under PAM: the auth
// stack, then the account stack and, for an expired password, the
// change — all prompts go to the client, as in OpenSSH.
func (s *decider) pamKbdOp(ctx context.Context, h *pam.Handle, conv pam.Conversation, k *kbdRound) error {
	if err := h.Authenticate(ctx, conv, s.pamFlags()); err != nil {
		return err
	}
	if s.acct.denied != nil {
		return nil // never reaches success; no account stack for it
	}
	err := h.AcctMgmt(ctx, conv, s.pamFlags())
	if errors.Is(err, pam.ErrNewAuthtokRequired) {
		err = h.ChangeExpiredAuthTok(ctx, conv)
	}
	k.answered = err == nil
	return err
}

// kbdNext waits for the dialog's next prompt or its end.
func (s *decider) kbdNext(ctx context.Context) (outcome, *perm.Permissions) {
	k := s.kbd
	r, done, err := k.dialog.Next(ctx)
	if !done && err == nil {
		text := joinTexts(r.Texts) + r.Prompt.Text
		k.challenge = &Challenge{Prompts: []Prompt{{Text: text, Echo: r.Prompt.Style == pam.PromptEchoOn}}}
		return asking, nil
	}
	s.abortKbd()
	if err != nil {
		s.log.Debug("auth: PAM keyboard-interactive failed", "user", s.user, "err", err)
		return failed, nil
	}
	if err := s.allowedAfterCheck(methodKbdInt); err != nil {
		s.log.Debug("auth: keyboard-interactive refused", "user", s.user, "why", err)
		return failed, nil
	}
	s.pamAccountDone = k.answered
	return succeeded, &perm.Permissions{User: s.user, Method: methodKbdInt, AuthInfo: []string{methodKbdInt + "/" + kbdIntDevicePAM}}
}

func joinTexts(ms []pam.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// abortKbd abandons a keyboard-interactive attempt in progress.
func (s *decider) abortKbd() {
	k := s.kbd
	s.kbd = nil
	if k == nil || k.dialog == nil {
		return
	}
	k.dialog.Abort()
	k.cancel()
}

var errNoRound = errors.New("auth: info response without a pending info request")

// Respond takes the client's INFO_RESPONSE for the pending round.
func (s *decider) Respond(ctx context.Context, responses []string) (*Decision, error) {
	if s.acct == nil {
		return nil, errBegun
	}
	if s.requests++; s.requests > 10*s.cfg.maxTries {
		return disconnectDecision(wire.DisconnectNoMoreAuthMethodsAvailable, "too many authentication requests", ErrTooManyRequests), nil
	}
	k := s.kbd
	if k == nil || k.challenge == nil {
		return disconnectDecision(wire.DisconnectProtocolError, "unexpected info response", errNoRound), nil
	}
	if len(responses) != len(k.challenge.Prompts) {
		s.abortKbd()
		return disconnectDecision(wire.DisconnectProtocolError, "wrong number of responses", errResponseCount), nil
	}
	s.start, s.info = time.Now(), ""
	out, perms := s.respond(ctx, k, responses)
	return s.marked(s.decision(ctx, methodKbdInt, out, perms)), nil
}

func (s *decider) respond(ctx context.Context, k *kbdRound, responses []string) (outcome, *perm.Permissions) {
	for _, r := range responses {
		if !utf8.ValidString(r) || strings.IndexByte(r, 0) >= 0 {
			s.abortKbd()
			s.log.Debug("auth: keyboard-interactive response is not UTF-8 text", "user", s.user)
			return failed, nil
		}
	}
	if k.dialog == nil { // the password prompt
		s.kbd = nil
		ok := s.checkPassword(ctx, responses[0])
		if err := s.allowedAfterCheck(methodKbdInt); err != nil || !ok {
			return failed, nil
		}
		return succeeded, &perm.Permissions{User: s.user, Method: methodKbdInt}
	}
	k.challenge = nil
	if err := k.dialog.Answer(ctx, responses[0]); err != nil {
		s.abortKbd()
		return failed, nil
	}
	return s.kbdNext(ctx)
}

// succeed completes a method: a partial success while AuthenticationMethods
// wants more, else the account checks and the login.
func (s *decider) succeed(ctx context.Context, method string, perms *perm.Permissions) *Decision {
	if len(perms.AuthInfo) == 0 {
		perms.AuthInfo = []string{method}
	}
	s.partial = mergePerms(s.partial, perms)
	if !s.prog.complete(method) {
		s.authLog(s.log.Info, "Partial", method)
		return &Decision{Verdict: Failure, Methods: s.prog.next(s.cfg.methods), Partial: true}
	}
	perms, s.partial = s.partial, nil
	perms.Method = strings.Join(s.prog.done, ",")
	banner := ""
	if s.cfg.UsePAM && !s.pamAccountDone {
		var d *Decision
		if banner, d = s.pamAccount(ctx); d != nil {
			return d
		}
	}
	if s.pwExpired {
		restrictToPasswordChange(perms)
	}
	s.authLog(s.log.Info, "Accepted", method)
	s.done = true
	return &Decision{Verdict: Success, Perms: perms, Banner: banner}
}

// pamAccount runs PAM's account stack after a method other than
// keyboard-interactive (which runs it in its dialog). A refusal ends the
// connection, as in OpenSSH, after showing PAM's messages.
func (s *decider) pamAccount(ctx context.Context) (string, *Decision) {
	h, err := s.pamHandle()
	var texts []pam.Message
	if err == nil {
		conv := func(_ context.Context, m pam.Message) (string, error) {
			if m.Style.IsPrompt() {
				return "", errors.New("no prompts after authentication")
			}
			texts = append(texts, m)
			return "", nil
		}
		ctx, cancel := s.cfg.withGrace(ctx)
		defer cancel()
		err = h.AcctMgmt(ctx, conv, s.pamFlags())
	}
	banner := joinTexts(texts)
	if errors.Is(err, pam.ErrNewAuthtokRequired) {
		s.pwExpired = true
		return banner, nil
	}
	if err != nil {
		s.logf(s.log.Error, "Access denied for user %s by PAM account configuration", s.user)
		d := disconnectDecision(wire.DisconnectByApplication, "Access denied by PAM account configuration", err)
		d.Banner = banner
		return banner, d
	}
	return banner, nil
}

// passwdCommand is what a login with an expired password runs, as
// OpenSSH's do_pwchange: a warning and passwd(1) on a terminal.
const passwdCommand = `echo 'WARNING: Your password has expired.' >&2; ` +
	`if [ -t 0 ]; then echo 'You must change your password now and log in again!' >&2; exec passwd; fi; ` +
	`echo 'Password change required but no TTY available.' >&2; exit 1`

// restrictToPasswordChange is OpenSSH's auth_restrict_session for an
// expired password: a pty and passwd, nothing else.
func restrictToPasswordChange(p *perm.Permissions) {
	p.ForceCommand = passwdCommand
	p.NoPortForwarding, p.NoAgentForwarding, p.NoX11Forwarding, p.NoUserRC = true, true, true, true
	p.NoPTY = false
	p.PermitOpen, p.PermitListen = []string{}, []string{}
}

// mergePerms combines the permissions of the methods of one login: the
// restrictions of each apply.
func mergePerms(a, b *perm.Permissions) *perm.Permissions {
	if a == nil {
		c := *b
		c.AuthInfo = slices.Clone(b.AuthInfo)
		return &c
	}
	if a.ForceCommand == "" {
		a.ForceCommand = b.ForceCommand
	}
	if a.KeyFingerprint == "" {
		a.KeyFingerprint = b.KeyFingerprint
	}
	if a.PermitOpen == nil {
		a.PermitOpen = b.PermitOpen
	}
	if a.PermitListen == nil {
		a.PermitListen = b.PermitListen
	}
	a.Environment = append(a.Environment, b.Environment...)
	a.AuthInfo = append(a.AuthInfo, b.AuthInfo...)
	a.NoPTY = a.NoPTY || b.NoPTY
	a.NoPortForwarding = a.NoPortForwarding || b.NoPortForwarding
	a.NoAgentForwarding = a.NoAgentForwarding || b.NoAgentForwarding
	a.NoX11Forwarding = a.NoX11Forwarding || b.NoX11Forwarding
	a.NoUserRC = a.NoUserRC || b.NoUserRC
	return a
}
