package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"

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
)

// Decision is an Authority's answer to one request.
type Decision struct {
	Verdict Verdict
	Methods []string          // Failure: the methods that can continue
	Partial bool              // Failure: partial success
	Perms   *perm.Permissions // Success
	Reason  uint32            // Disconnect: an SSH_MSG_DISCONNECT reason code
	Message string            // Disconnect: the text for the client
	Err     error             // Disconnect: the cause, for logs and errors.Is
}

// NewAuthority returns the in-process Authority for one connection:
// sessionID is the exchange hash of its first key exchange (what
// publickey signatures cover) and remote the client's address (for
// from=, AllowUsers, source-address and logs). cfg may be nil for the
// defaults; it must not change while in use.
func NewAuthority(cfg *Config, sessionID []byte, remote net.Addr) (Authority, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newDecider(newSettings(cfg), sessionID, remote), nil
}

// decider is the in-process Authority: the state of one connection's
// authentication.
type decider struct {
	cfg       *settings
	log       *slog.Logger
	addr      netip.Addr
	sessionID []byte

	user, service string
	acct          *account // nil until Begin
	requests      int
	failures      int
}

func newDecider(cfg *settings, sessionID []byte, remote net.Addr) *decider {
	return &decider{cfg: cfg, addr: remoteIP(remote), sessionID: sessionID, log: peerLogger(cfg.log, remote)}
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

func (s *decider) Decide(_ context.Context, req *Request) (*Decision, error) {
	if s.acct == nil {
		return nil, errBegun
	}
	if req.User != s.user || req.Service != s.service {
		return disconnectDecision(wire.DisconnectProtocolError, "change of user or service not allowed", ErrUserChanged), nil
	}
	if s.requests++; s.requests > 10*s.cfg.maxTries {
		return disconnectDecision(wire.DisconnectNoMoreAuthMethodsAvailable, "too many authentication requests", ErrTooManyRequests), nil
	}
	out, perms := s.dispatch(req)
	return s.decision(req, out, perms), nil
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
)

// decision turns a method's outcome into the answer, counting failures.
func (s *decider) decision(req *Request, out outcome, perms *perm.Permissions) *Decision {
	switch out {
	case succeeded:
		return &Decision{Verdict: Success, Perms: perms}
	case keyOK:
		return &Decision{Verdict: KeyOK}
	case failed:
		if s.failures++; s.failures >= s.cfg.maxTries {
			s.log.Warn("auth: too many authentication failures", "user", req.User, "failures", s.failures)
			return disconnectDecision(wire.DisconnectNoMoreAuthMethodsAvailable, "too many authentication failures", ErrTooManyFailures)
		}
	}
	return &Decision{Verdict: Failure, Methods: s.cfg.methods}
}

// dispatch runs the method of req.
func (s *decider) dispatch(req *Request) (outcome, *perm.Permissions) {
	switch req.Method {
	case "none":
		if s.requests == 1 {
			return failedUncounted, nil
		}
		return failed, nil
	case "publickey":
		return s.publicKey(req)
	case "password":
		return s.password(req)
	}
	s.log.Debug("auth: unsupported method", "user", req.User, "method", quote(req.Method))
	return failed, nil
}
