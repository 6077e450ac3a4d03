package auth

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// Run serves the "ssh-userauth" service on pc after the first key
// exchange: it answers SSH_MSG_SERVICE_REQUEST and then the user
// authentication requests until one succeeds or the client is
// disconnected. remote is the client's address (for from=, AllowUsers,
// source-address and logs); cfg may be nil for the defaults.
//
// On success it has sent SSH_MSG_USERAUTH_SUCCESS and returns the
// permissions of the login. Otherwise it returns a *ConfigError, a
// *DisconnectError (it has already sent SSH_MSG_DISCONNECT when pc is a
// wire.Disconnector, and says so in Sent), or an error of pc's
// (wrapped). Run does not close pc, except that cancelling ctx closes it
// to interrupt a blocked ReadPacket; the caller closes pc after a failure.
func Run(ctx context.Context, pc wire.PacketConn, cfg *Config, remote net.Addr) (*perm.Permissions, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := newSession(pc, newSettings(cfg), remote)
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	p, err := s.serve()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("auth: %w: %w", context.Cause(ctx), err)
	}
	return p, err
}

// session is the state of one conversation.
type session struct {
	pc        wire.PacketConn
	cfg       *settings
	log       *slog.Logger
	addr      netip.Addr
	sessionID []byte

	user, service string
	acct          *account // nil until the first request
	requests      int
	failures      int
	buf           []byte
}

func newSession(pc wire.PacketConn, cfg *settings, remote net.Addr) *session {
	addr, port := remoteAddr(remote)
	peer := "unknown"
	if remote != nil {
		peer = remote.String()
	}
	return &session{pc: pc, cfg: cfg, addr: addr, sessionID: pc.SessionID(),
		log: cfg.log.With("remote", peer, "remote_ip", addr.String(), "remote_port", port)}
}

// outcome of one request.
type outcome int

const (
	failed          outcome = iota // send FAILURE, count it
	failedUncounted                // send FAILURE, do not count it
	keyOK                          // send PK_OK: the queried key would do
	succeeded
)

func (s *session) serve() (*perm.Permissions, error) {
	if err := s.acceptService(); err != nil {
		return nil, err
	}
	for {
		p, err := s.read()
		if err != nil {
			return nil, err
		}
		perms, err := s.request(p)
		if perms != nil || err != nil {
			return perms, err
		}
	}
}

// acceptService handles SERVICE_REQUEST "ssh-userauth" (RFC 4253 §10).
func (s *session) acceptService() error {
	p, err := s.read()
	if err != nil {
		return err
	}
	if len(p) == 0 || p[0] != wire.MsgServiceRequest {
		return s.unexpected(p, "service request")
	}
	name, err := parseServiceRequest(p)
	if err != nil {
		return s.disconnect(wire.DisconnectProtocolError, "malformed service request", err)
	}
	if name != serviceUserAuth {
		return s.disconnect(wire.DisconnectServiceNotAvailable, "service not available",
			fmt.Errorf("%w: %s", ErrBadService, quote(name)))
	}
	return s.write(appendServiceAccept(s.buf[:0], name))
}

// maxRequests bounds requests of every kind, including PK_OK queries
// which do not count as failures.
func (s *session) maxRequests() int { return 10 * s.cfg.maxTries }

// request handles one message after SERVICE_ACCEPT.
func (s *session) request(p []byte) (*perm.Permissions, error) {
	if len(p) == 0 || p[0] != wire.MsgUserAuthRequest {
		return nil, s.unexpected(p, "userauth request")
	}
	if s.requests++; s.requests > s.maxRequests() {
		return nil, s.disconnect(wire.DisconnectNoMoreAuthMethodsAvailable, "too many authentication requests", ErrTooManyRequests)
	}
	req, err := parseUserAuthRequest(p)
	if err != nil {
		return nil, s.disconnect(wire.DisconnectProtocolError, "malformed userauth request", err)
	}
	if err := s.checkRequest(req); err != nil {
		return nil, err
	}
	out, perms := s.dispatch(req)
	return s.answer(req, out, perms)
}

// answer sends the reply for the outcome of req.
func (s *session) answer(req *userAuthRequest, out outcome, perms *perm.Permissions) (*perm.Permissions, error) {
	switch out {
	case succeeded:
		if err := s.write(appendSuccess(s.buf[:0])); err != nil {
			return nil, err
		}
		return perms, nil
	case keyOK:
		return nil, s.write(appendPKOK(s.buf[:0], req.Algo, req.KeyBlob))
	case failed:
		if s.failures++; s.failures >= s.cfg.maxTries {
			s.log.Warn("auth: too many authentication failures", "user", req.User, "failures", s.failures)
			return nil, s.disconnect(wire.DisconnectNoMoreAuthMethodsAvailable, "too many authentication failures", ErrTooManyFailures)
		}
	}
	return nil, s.write(appendFailure(s.buf[:0], s.cfg.methods, false))
}

// dispatch runs the method of req.
func (s *session) dispatch(req *userAuthRequest) (outcome, *perm.Permissions) {
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

// checkRequest pins the user and service to those of the first request
// and sends the banner before the first answer.
func (s *session) checkRequest(req *userAuthRequest) error {
	if s.acct != nil {
		if req.User != s.user || req.Service != s.service {
			return s.disconnect(wire.DisconnectProtocolError, "change of user or service not allowed", ErrUserChanged)
		}
		return nil
	}
	if req.Service != serviceConnection {
		return s.disconnect(wire.DisconnectServiceNotAvailable, "service not available",
			fmt.Errorf("%w: %s", ErrBadService, quote(req.Service)))
	}
	if !validUserName(req.User) {
		return s.disconnect(wire.DisconnectIllegalUserName, "illegal user name",
			fmt.Errorf("%w: %s", ErrIllegalUser, quote(req.User)))
	}
	s.user, s.service = req.User, req.Service
	s.acct = s.resolve(req.User)
	return s.sendBanner()
}

func (s *session) sendBanner() error {
	if s.cfg.Banner == "" {
		return nil
	}
	return s.write(appendBanner(s.buf[:0], s.cfg.Banner))
}

func (s *session) write(p []byte) error {
	s.buf = p[:0]
	if err := s.pc.WritePacket(p); err != nil {
		return fmt.Errorf("auth: write: %w", err)
	}
	return nil
}

// read returns the next message, answering those whose number no SSH
// specification defines with SSH_MSG_UNIMPLEMENTED (RFC 4253 §11.4).
// They count against the request limit, so a flood of them ends.
func (s *session) read() ([]byte, error) {
	u, canReply := s.pc.(wire.Unimplementer)
	for {
		p, err := s.pc.ReadPacket()
		if err != nil {
			return nil, s.readError(err)
		}
		if !canReply || len(p) == 0 || wire.Known(p[0]) {
			return p, nil
		}
		if s.requests++; s.requests > s.maxRequests() {
			return nil, s.disconnect(wire.DisconnectProtocolError, "too many unknown messages", ErrTooManyRequests)
		}
		s.log.Debug("auth: unknown message answered with UNIMPLEMENTED", "type", p[0])
		if err := u.Unimplemented(); err != nil {
			return nil, fmt.Errorf("auth: write: %w", err)
		}
	}
}

func (s *session) readError(err error) error {
	s.log.Info("auth: connection ended before authentication", "err", err)
	return fmt.Errorf("auth: read: %w", err)
}

func (s *session) unexpected(p []byte, want string) error {
	got := "empty message"
	if len(p) > 0 {
		got = fmt.Sprintf("message %d", p[0])
	}
	return s.disconnect(wire.DisconnectProtocolError, "unexpected message",
		fmt.Errorf("%w: %s, want %s", ErrUnexpectedMessage, got, want))
}

// disconnect logs the cause, sends SSH_MSG_DISCONNECT when pc can, and
// returns the error for Run.
func (s *session) disconnect(reason uint32, msg string, cause error) error {
	e := &DisconnectError{Reason: reason, Msg: msg, Err: cause}
	s.log.Warn("auth: disconnecting", "user", s.user, "reason", reason, "cause", cause)
	if d, ok := s.pc.(wire.Disconnector); ok {
		if err := d.Disconnect(reason, msg); err != nil {
			s.log.Debug("auth: sending disconnect failed", "err", err)
		} else {
			e.Sent = true
		}
	}
	return e
}
