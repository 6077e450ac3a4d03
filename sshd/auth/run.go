package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"

	"github.com/offload/offload/internal/secret"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/sshlog"
	"github.com/offload/offload/sshd/transport"
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
	a, err := NewAuthority(cfg, pc.SessionID(), remote)
	if err != nil {
		return nil, err
	}
	defer a.(io.Closer).Close()
	st := newSettings(cfg)
	return Serve(ctx, pc, a, &ServeOptions{MaxRequests: MaxRequests(cfg), Logger: st.log, Remote: remote})
}

// MaxRequests bounds the userauth requests of any kind of a connection
// under cfg (nil: the defaults): ten times its MaxAuthTries.
func MaxRequests(cfg *Config) int {
	n := DefaultMaxAuthTries
	if cfg != nil && cfg.MaxAuthTries > 0 {
		n = cfg.MaxAuthTries
	}
	return 10 * n
}

// ServeOptions configure the conversation of Serve.
type ServeOptions struct {
	// MaxRequests bounds the requests of any kind, including PK_OK
	// queries and unknown messages (0: MaxRequests(nil)).
	MaxRequests int
	// Logger receives protocol errors (nil means slog.Default()).
	Logger *slog.Logger
	// Remote is the client's address, for logs.
	Remote net.Addr
}

// Serve is Run with the decisions made by a: it runs the conversation of
// the "ssh-userauth" service on pc (parsing and answering every message)
// and asks a about every request. It returns as Run does.
func Serve(ctx context.Context, pc wire.PacketConn, a Authority, o *ServeOptions) (*perm.Permissions, error) {
	if o == nil {
		o = &ServeOptions{}
	}
	s := newConversation(ctx, pc, a, o)
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	p, err := s.serve()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("auth: %w: %w", context.Cause(ctx), err)
	}
	return p, err
}

// conversation is the protocol state of one Serve.
type conversation struct {
	ctx   context.Context
	pc    wire.PacketConn
	a     Authority
	log   *slog.Logger
	max   int
	begun bool

	user, service string
	style         string // after a colon in the user name; pinned like the user
	requests      int
	buf           []byte
	prompts       int  // prompts of the INFO_REQUEST awaiting a response; -1 none
	invalid       bool // the Authority said the user is invalid
	addr          netip.Addr
	port          uint16
}

func newConversation(ctx context.Context, pc wire.PacketConn, a Authority, o *ServeOptions) *conversation {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	max := o.MaxRequests
	if max <= 0 {
		max = MaxRequests(nil)
	}
	addr, port := remoteAddr(o.Remote)
	return &conversation{ctx: ctx, pc: pc, a: a, log: peerLogger(log, o.Remote), max: max, prompts: -1, addr: addr, port: port}
}

func (s *conversation) serve() (*perm.Permissions, error) {
	if err := s.acceptService(); err != nil {
		return nil, err
	}
	for {
		p, err := s.read()
		if err != nil {
			return nil, err
		}
		var perms *perm.Permissions
		if len(p) > 0 && p[0] == msgInfoResponse {
			perms, err = s.infoResponse(p)
		} else {
			perms, err = s.request(p)
		}
		if perms != nil || err != nil {
			return perms, err
		}
	}
}

// acceptService handles SERVICE_REQUEST "ssh-userauth" (RFC 4253 §10).
func (s *conversation) acceptService() error {
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

// request handles one message after SERVICE_ACCEPT.
func (s *conversation) request(p []byte) (*perm.Permissions, error) {
	if len(p) == 0 || p[0] != wire.MsgUserAuthRequest {
		return nil, s.unexpected(p, "userauth request")
	}
	if s.requests++; s.requests > s.max {
		return nil, s.disconnect(wire.DisconnectNoMoreAuthMethodsAvailable, "too many authentication requests", ErrTooManyRequests)
	}
	req, err := parseUserAuthRequest(p)
	if err != nil {
		return nil, s.disconnect(wire.DisconnectProtocolError, "malformed userauth request", err)
	}
	if err := s.checkRequest(req); err != nil {
		return nil, err
	}
	s.prompts = -1 // a new request abandons a keyboard-interactive round
	d, err := s.a.Decide(s.ctx, req)
	if req.Method == methodPassword { // used: cleared from memory, as OpenSSH does
		secret.WipeString(req.Password)
		secret.Wipe(p)
	}
	if err != nil {
		return nil, s.disconnect(wire.DisconnectByApplication, "authentication unavailable", err)
	}
	return s.answer(req, d)
}

// answer sends the reply for the decision d about req.
func (s *conversation) answer(req *Request, d *Decision) (*perm.Permissions, error) {
	s.invalid = d.InvalidUser
	if d.Banner != "" {
		if err := s.write(appendBanner(s.buf[:0], d.Banner)); err != nil {
			return nil, err
		}
	}
	switch d.Verdict {
	case Success:
		if d.Perms == nil {
			return nil, s.disconnect(wire.DisconnectByApplication, "authentication unavailable", errNoPerms)
		}
		if err := s.write(appendSuccess(s.buf[:0])); err != nil {
			return nil, err
		}
		return d.Perms, nil
	case KeyOK:
		if req == nil { // PK_OK answers a publickey query only
			return nil, s.disconnect(wire.DisconnectByApplication, "authentication unavailable", errBadInfoRequest)
		}
		return nil, s.write(appendPKOK(s.buf[:0], req.Algo, req.KeyBlob))
	case Disconnect:
		return nil, s.disconnect(d.Reason, d.Message, d.Err)
	case InfoRequest:
		return nil, s.infoRequest(d.Info)
	}
	return nil, s.write(appendFailure(s.buf[:0], d.Methods, d.Partial))
}

// infoRequest sends an INFO_REQUEST and remembers how many responses the
// client owes.
func (s *conversation) infoRequest(r *Challenge) error {
	if _, ok := s.a.(Responder); !ok || r == nil || len(r.Prompts) > MaxPrompts {
		return s.disconnect(wire.DisconnectByApplication, "authentication unavailable", errBadInfoRequest)
	}
	s.prompts = len(r.Prompts)
	return s.write(appendInfoRequest(s.buf[:0], r))
}

var (
	errBadInfoRequest  = errors.New("auth: an info request from an Authority that cannot take responses, or with too many prompts")
	errUnexpectedReply = errors.New("auth: info response without an info request")
)

// infoResponse handles SSH_MSG_USERAUTH_INFO_RESPONSE.
func (s *conversation) infoResponse(p []byte) (*perm.Permissions, error) {
	if s.requests++; s.requests > s.max {
		return nil, s.disconnect(wire.DisconnectNoMoreAuthMethodsAvailable, "too many authentication requests", ErrTooManyRequests)
	}
	if s.prompts < 0 {
		return nil, s.disconnect(wire.DisconnectProtocolError, "unexpected info response", errUnexpectedReply)
	}
	resp, err := parseInfoResponse(p, s.prompts)
	if err != nil {
		return nil, s.disconnect(wire.DisconnectProtocolError, "malformed info response", err)
	}
	s.prompts = -1
	d, err := s.a.(Responder).Respond(s.ctx, resp)
	secret.WipeStrings(resp) // answers may be passwords
	secret.Wipe(p)
	if err != nil {
		return nil, s.disconnect(wire.DisconnectByApplication, "authentication unavailable", err)
	}
	return s.answer(nil, d)
}

// errNoPerms: an Authority granted a login without its permissions.
var errNoPerms = errors.New("auth: success without permissions")

// checkRequest pins the user and service to those of the first request
// and sends the banner before the first answer.
func (s *conversation) checkRequest(req *Request) error {
	if s.begun {
		if req.User != s.user || req.Service != s.service || req.Style != s.style {
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
	s.user, s.service, s.style, s.begun = req.User, req.Service, req.Style, true
	banner, err := s.a.Begin(s.ctx, req.User, req.Service)
	if err != nil {
		return s.disconnect(wire.DisconnectByApplication, "authentication unavailable", err)
	}
	if banner == "" {
		return nil
	}
	return s.write(appendBanner(s.buf[:0], banner))
}

func (s *conversation) write(p []byte) error {
	s.buf = p[:0]
	if err := s.pc.WritePacket(p); err != nil {
		return fmt.Errorf("auth: write: %w", err)
	}
	return nil
}

// read returns the next message, answering those whose number no SSH
// specification defines with SSH_MSG_UNIMPLEMENTED (RFC 4253 §11.4).
// They count against the request limit, so a flood of them ends.
func (s *conversation) read() ([]byte, error) {
	u, canReply := s.pc.(wire.Unimplementer)
	for {
		p, err := s.pc.ReadPacket()
		if err != nil {
			return nil, s.readError(err)
		}
		if !canReply || len(p) == 0 || wire.Known(p[0]) {
			return p, nil
		}
		if s.requests++; s.requests > s.max {
			return nil, s.disconnect(wire.DisconnectProtocolError, "too many unknown messages", ErrTooManyRequests)
		}
		s.log.Debug("auth: unknown message answered with UNIMPLEMENTED", "type", p[0])
		if err := u.Unimplemented(); err != nil {
			return nil, fmt.Errorf("auth: write: %w", err)
		}
	}
}

func (s *conversation) readError(err error) error {
	if s.ctx.Err() == nil { // not our own deadline: the client went away
		s.logClosed(err)
	}
	s.log.Debug("auth: connection ended before authentication", "err", err)
	return fmt.Errorf("auth: read: %w", err)
}

// logClosed logs the end of the connection by the client in OpenSSH's
// words: a named user is an "invalid user" when the Authority's last
// decision said so, else an "authenticating user".
func (s *conversation) logClosed(err error) {
	p := sshlog.Peer{Addr: s.addr, Port: s.port, User: s.user, InvalidUser: s.invalid}
	if logPeerDisconnect(s.log, p, err) {
		return
	}
	s.log.Info(sshlog.ConnectionClosed(p), sshlog.Worded())
}

// logPeerDisconnect logs the client's SSH_MSG_DISCONNECT as OpenSSH does
// ("Received disconnect from A port P:11: disconnected by user", at
// error level for reasons other than 11, then "Disconnected from ...")
// and reports whether err was one.
func logPeerDisconnect(log *slog.Logger, p sshlog.Peer, err error) bool {
	var de *transport.DisconnectError
	if !errors.As(err, &de) || !de.FromPeer || de.Reason == wire.DisconnectConnectionLost {
		return false
	}
	msg, uerr := strconv.Unquote(de.Message)
	if uerr != nil {
		msg = de.Message
	}
	fn := log.Info
	if de.Reason != wire.DisconnectByApplication {
		fn = log.Error
	}
	fn(sshlog.ReceivedDisconnect(p, de.Reason, msg), sshlog.Worded())
	log.Info(sshlog.Disconnected(p), sshlog.Worded())
	return true
}

// LogSessionEnd logs the end of an authenticated connection of user in
// OpenSSH's words when the client ended it: its SSH_MSG_DISCONNECT
// ("Received disconnect from A port P:11: disconnected by user", then
// "Disconnected from user U A port P"), or its going away ("Connection
// closed by A port P", which OpenSSH logs at VERBOSE: Debug here). Other
// ends (server errors, our own disconnects, shutdown) are the caller's
// to log.
func LogSessionEnd(log *slog.Logger, remote net.Addr, user string, err error) {
	addr, port := remoteAddr(remote)
	p := sshlog.Peer{Addr: addr, Port: port, User: user, Authenticated: true}
	if logPeerDisconnect(log, p, err) {
		return
	}
	var de *transport.DisconnectError
	if err == nil || errors.Is(err, io.EOF) || (errors.As(err, &de) && de.FromPeer) {
		log.Debug(sshlog.ConnectionClosed(sshlog.Peer{Addr: addr, Port: port, Authenticated: true}), sshlog.Worded())
	}
}

func (s *conversation) unexpected(p []byte, want string) error {
	got := "empty message"
	if len(p) > 0 {
		got = fmt.Sprintf("message %d", p[0])
	}
	return s.disconnect(wire.DisconnectProtocolError, "unexpected message",
		fmt.Errorf("%w: %s, want %s", ErrUnexpectedMessage, got, want))
}

// disconnect logs the cause, sends SSH_MSG_DISCONNECT when pc can, and
// returns the error for Run.
func (s *conversation) disconnect(reason uint32, msg string, cause error) error {
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
