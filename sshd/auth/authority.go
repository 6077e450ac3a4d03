package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/offload/offload/sshd/account"
	"github.com/offload/offload/sshd/pam"
	"github.com/offload/offload/sshd/sshlog"

	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// Authority decides the user authentication of one connection. Serve runs
// the conversation (it parses and answers the client's messages) and asks
// the Authority about every request; nothing is granted without it.
//
// NewAuthority is the in-process implementation. Under privilege
// separation the pre-auth worker's Authority asks the monitor, which runs
// NewAuthority itself with the session identifier it knows from the host
// key signature it made, so a worker that lies cannot obtain a login
// without a valid proof.
type Authority interface {
	// Begin is called once, with the user name and service of the first
	// request, before any Decide. It returns the banner to send before
	// the first answer ("" for none).
	Begin(ctx context.Context, user, service string) (banner string, err error)
	// Decide decides one request of the user and service given to Begin.
	Decide(ctx context.Context, req *Request) (*Decision, error)
}

// Verdict is the outcome of one request.
type Verdict uint8

// Verdicts.
const (
	// Failure: SSH_MSG_USERAUTH_FAILURE listing Decision.Methods.
	Failure Verdict = iota
	// Success: SSH_MSG_USERAUTH_SUCCESS; Decision.Perms is the login.
	Success
	// KeyOK: SSH_MSG_USERAUTH_PK_OK, the queried key would be accepted
	// (never authentication).
	KeyOK
	// Disconnect: end the conversation with SSH_MSG_DISCONNECT
	// (Decision.Reason, Decision.Message).
	Disconnect
	// InfoRequest: send SSH_MSG_USERAUTH_INFO_REQUEST (Decision.Info) and
	// give the client's INFO_RESPONSE to the Authority's Respond
	// (keyboard-interactive, RFC 4256); only a Responder returns it.
	InfoRequest
)

// Responder is an Authority that runs keyboard-interactive: its Decide
// may answer InfoRequest, and Serve then passes the responses of the
// client's SSH_MSG_USERAUTH_INFO_RESPONSE to Respond, which decides as
// Decide does (possibly another InfoRequest). Serve checks that the
// number of responses is that of the prompts sent; the Responder checks
// it again, and that a round is pending at all. A new USERAUTH_REQUEST
// while a round is pending abandons it (Decide is called as usual).
type Responder interface {
	Respond(ctx context.Context, responses []string) (*Decision, error)
}

// Decision is an Authority's answer to one request.
type Decision struct {
	Verdict Verdict
	Methods []string          // Failure: the methods that can continue
	Partial bool              // Failure: partial success
	Perms   *perm.Permissions // Success
	Reason  uint32            // Disconnect: an SSH_MSG_DISCONNECT reason code
	Message string            // Disconnect: the text for the client
	Err     error             // Disconnect: the cause, for logs and errors.Is
	Info    *Challenge        // InfoRequest: the prompts to send
	// Banner, when not empty, is sent as SSH_MSG_USERAUTH_BANNER before
	// the answer (PAM's messages, such as pam_nologin's text).
	Banner string
	// InvalidUser: the user is unknown or refused by the account policy
	// (what OpenSSH's log lines call an "invalid user"); the conversation
	// names the user so when the client goes away.
	InvalidUser bool
}

// NewAuthority returns the in-process Authority for one connection:
// sessionID is the exchange hash of its first key exchange (what
// publickey signatures cover) and remote the client's address (for
// from=, AllowUsers, source-address and logs). cfg may be nil for the
// defaults; it must not change while in use.
func NewAuthority(cfg *Config, sessionID []byte, remote net.Addr) (Authority, error) {
	return NewConnAuthority(cfg, ConnInfo{SessionID: sessionID, Remote: remote})
}

// ConnInfo is what an Authority knows of its connection.
type ConnInfo struct {
	SessionID []byte
	// HostKey is the server's host key blob of the first key exchange;
	// without it, publickey-hostbound-v00@openssh.com requests fail.
	HostKey []byte
	// Remote is the client's address; Local, the server's end (the
	// commands' %C token names both), may be nil.
	Remote, Local net.Addr
}

// NewConnAuthority is NewAuthority with everything known of the
// connection.
func NewConnAuthority(cfg *Config, ci ConnInfo) (Authority, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := newDecider(newSettings(cfg), ci.SessionID, ci.Remote)
	d.local = ci.Local
	d.hostKey = bytes.Clone(ci.HostKey)
	return d, nil
}

// decider is the in-process Authority: the state of one connection's
// authentication.
type decider struct {
	cfg       *settings
	log       *slog.Logger
	addr      netip.Addr
	sessionID []byte
	hostKey   []byte // of the first key exchange; nil: no host-bound requests

	user, service string
	acct          *target // nil until Begin
	requests      int
	failures      int

	port           uint16
	local          net.Addr          // the server's end; nil when not known
	prog           *progress         // AuthenticationMethods
	partial        *perm.Permissions // from methods completed before the last
	usedKeys       map[string]bool   // keys that completed a publickey step
	queried        *queriedKey       // the last key a query was told is acceptable
	notices        []string          // texts for the user (expiry warnings)
	info           string            // the current method's detail for logs
	secret         []byte            // TimingSecret
	start          time.Time         // of the request being decided
	kbd            *kbdRound         // keyboard-interactive in progress
	pamh           *pam.Handle       // the PAM transaction, once started
	pwExpired      bool              // the password must be changed first
	pamAccountDone bool              // PAM's account stack ran (keyboard-interactive)
	noneTried      bool              // a "none" request was answered
	done           bool              // a login succeeded
}

func newDecider(cfg *settings, sessionID []byte, remote net.Addr) *decider {
	addr, port := remoteAddr(remote)
	secret := cfg.TimingSecret
	if secret == nil {
		secret = make([]byte, 32)
		rand.Read(secret)
	}
	return &decider{cfg: cfg, addr: addr, port: port, sessionID: sessionID, log: peerLogger(cfg.log, remote),
		prog: newProgress(cfg.lists), usedKeys: map[string]bool{}, secret: secret}
}

// Close ends what the decider holds: a keyboard-interactive dialog in
// progress and the PAM transaction. The caller of NewAuthority calls it
// when the conversation is over.
func (s *decider) Close() error {
	s.abortKbd()
	if s.pamh != nil {
		err := s.pamh.End()
		s.pamh = nil
		return err
	}
	return nil
}

// peerLogger is log with the client's address.
func peerLogger(log *slog.Logger, remote net.Addr) *slog.Logger {
	addr, port := remoteAddr(remote)
	peer := "unknown"
	if remote != nil {
		peer = remote.String()
	}
	return log.With("remote", peer, "remote_ip", addr.String(), "remote_port", port)
}

func remoteIP(remote net.Addr) netip.Addr {
	addr, _ := remoteAddr(remote)
	return addr
}

// errBegun: Begin was called twice, or Decide before Begin.
var errBegun = errors.New("auth: Begin must be called exactly once, before Decide")

func (s *decider) Begin(_ context.Context, user, service string) (string, error) {
	if s.acct != nil {
		return "", errBegun
	}
	if service != serviceConnection {
		return "", fmt.Errorf("%w: %s", ErrBadService, quote(service))
	}
	if !validUserName(user) {
		return "", fmt.Errorf("%w: %s", ErrIllegalUser, quote(user))
	}
	s.user, s.service = user, service
	s.acct = s.resolve(user)
	return s.cfg.Banner, nil
}

func (s *decider) Decide(ctx context.Context, req *Request) (*Decision, error) {
	if s.acct == nil {
		return nil, errBegun
	}
	return s.marked(s.decide(ctx, req)), nil
}

// marked sets the decision's InvalidUser from the account.
func (s *decider) marked(d *Decision) *Decision {
	d.InvalidUser = s.invalidTag() != ""
	return d
}

func (s *decider) decide(ctx context.Context, req *Request) *Decision {
	s.start, s.info = time.Now(), ""
	s.abortKbd() // a new request abandons a keyboard-interactive round
	if req.User != s.user || req.Service != s.service {
		return disconnectDecision(wire.DisconnectProtocolError, "change of user or service not allowed", ErrUserChanged)
	}
	if s.requests++; s.requests > 10*s.cfg.maxTries {
		return disconnectDecision(wire.DisconnectNoMoreAuthMethodsAvailable, "too many authentication requests", ErrTooManyRequests)
	}
	method := policyMethod(req.Method)
	if !s.prog.allowed(method) && method != methodNone {
		s.log.Debug("auth: method not allowed by AuthenticationMethods now", "user", req.User, "method", quote(req.Method))
		return s.decision(ctx, method, failed, nil)
	}
	out, perms := s.dispatch(ctx, req)
	return s.decision(ctx, method, out, perms)
}

func disconnectDecision(reason uint32, msg string, cause error) *Decision {
	return &Decision{Verdict: Disconnect, Reason: reason, Message: msg, Err: cause}
}

// outcome of one request, as the methods see it.
type outcome int

const (
	failed          outcome = iota // send FAILURE, count it
	failedUncounted                // send FAILURE, do not count it
	keyOK                          // send PK_OK: the queried key would do
	succeeded
	asking // send INFO_REQUEST (s.kbd.challenge)
)

// decision turns a method's outcome into the answer: it completes
// AuthenticationMethods and the account checks on success, logs as
// OpenSSH does, counts failures and makes them last the per-user delay.
func (s *decider) decision(ctx context.Context, method string, out outcome, perms *perm.Permissions) *Decision {
	switch out {
	case succeeded:
		return s.succeed(ctx, method, perms)
	case keyOK:
		s.authLog(s.log.Debug, "Postponed", method)
		return &Decision{Verdict: KeyOK}
	case asking:
		s.authLog(s.log.Debug, "Postponed", method)
		return &Decision{Verdict: InfoRequest, Info: s.kbd.challenge}
	}
	return s.failure(ctx, method, out == failed)
}

// failure answers a failed request.
func (s *decider) failure(ctx context.Context, method string, counted bool) *Decision {
	s.authLogFailed(method)
	if method != methodNone {
		account.WaitMinimum(ctx, s.start, account.FailDelay(s.secret, s.user))
	}
	if counted {
		if s.failures++; s.failures >= s.cfg.maxTries {
			s.logf(s.log.Error, "maximum authentication attempts exceeded for %s%s from %s port %d ssh2 [preauth]", s.invalidTag(), s.user, s.addr, s.port)
			s.logf(s.log.Info, "%s", sshlog.TooManyFailures(s.peer()))
			return disconnectDecision(wire.DisconnectNoMoreAuthMethodsAvailable, "Too many authentication failures", ErrTooManyFailures)
		}
	}
	return &Decision{Verdict: Failure, Methods: s.prog.next(s.cfg.methods), Partial: s.partial != nil}
}

// dispatch runs the method of req.
func (s *decider) dispatch(ctx context.Context, req *Request) (outcome, *perm.Permissions) {
	switch req.Method {
	case methodNone:
		return s.none(ctx)
	case "publickey":
		return s.publicKey(req)
	case methodHostBound:
		return s.hostBound(req)
	case methodPassword:
		return s.password(ctx, req)
	case methodKbdInt:
		return s.kbdInt(ctx, req)
	}
	s.log.Debug("auth: unsupported method", "user", req.User, "method", quote(req.Method))
	return failed, nil
}

// Summary is what a connection's authentication came to, for the
// per-source penalties (package penalty's Outcome).
type Summary struct {
	Authenticated bool // a login succeeded
	Attempted     bool // at least one method other than the first none failed
	InvalidUser   bool // the user was unknown or refused by the account policy
	// Refused: the configuration refused the connection (RefuseConnection
	// in a Match block); set by the glue that applies it, not by
	// NewAuthority's Authority.
	Refused bool
}

// Summarizer is implemented by NewAuthority's Authority.
type Summarizer interface {
	Summary() Summary
}

// Summary reports how the authentication went so far.
func (s *decider) Summary() Summary {
	return Summary{Authenticated: s.done, Attempted: s.failures > 0,
		InvalidUser: s.acct != nil && s.acct.denied != nil && s.requests > 1}
}
