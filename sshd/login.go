package sshd

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/pam"
)

// ConnInfo is what the settings of a connection may depend on (the
// criteria of sshd_config's Match): the user of the first authentication
// request and the connection's endpoints.
type ConnInfo struct {
	User          string
	Remote, Local netip.AddrPort
}

// ConnSettings are the settings of one connection that Config.PerConnection
// may change; a nil field keeps the Server's.
type ConnSettings struct {
	Auth *auth.Config
	Conn *connection.Config
}

// login is a connection's authentication: once Begin knows the user it
// fixes the connection's settings (Config.PerConnection) and runs the
// in-process auth.Authority with them. It is the monitor's Login in the
// separated mode and the Authority of the in-process mode.
type login struct {
	auth          *auth.Config // the settings Begin chose
	cfg           *settings
	sessionID     []byte
	hostKey       []byte // that signed the first key exchange
	local, remote net.Addr
	inner         auth.Authority
	conn          *connection.Config
	refused       bool // Config.PerConnection said ErrRefuseConnection
}

// ErrRefuseConnection is what Config.PerConnection wraps in its error to
// refuse a connection by configuration (RefuseConnection): the login
// ends, and the source gets the refuseconnection penalty.
var ErrRefuseConnection = errors.New("sshd: connection refused by configuration")

func newLogin(cfg *settings, sessionID, hostKey []byte, local, remote net.Addr) *login {
	return &login{cfg: cfg, sessionID: sessionID, hostKey: hostKey, local: local, remote: remote, conn: cfg.Conn}
}

var errLoginBegun = errors.New("sshd: authentication already begun")

func (l *login) Begin(ctx context.Context, user, service string) (string, error) {
	if l.inner != nil {
		return "", errLoginBegun
	}
	ac, err := l.settingsFor(user)
	if err == nil {
		ac, err = l.applyChroot(user, ac)
	}
	if err != nil {
		return "", err
	}
	l.auth = ac
	ci := auth.ConnInfo{SessionID: l.sessionID, HostKey: l.hostKey, Remote: l.remote, Local: l.local}
	if l.inner, err = auth.NewConnAuthority(ac, ci); err != nil {
		return "", err
	}
	return l.inner.Begin(ctx, user, service)
}

// settingsFor evaluates Config.PerConnection for user.
func (l *login) settingsFor(user string) (*auth.Config, error) {
	ac := l.cfg.Auth
	if l.cfg.PerConnection == nil {
		return ac, nil
	}
	cs, err := l.cfg.PerConnection(ConnInfo{User: user, Remote: addrPort(l.remote), Local: addrPort(l.local)})
	if err != nil {
		l.refused = errors.Is(err, ErrRefuseConnection)
		return nil, err
	}
	if cs != nil && cs.Auth != nil {
		ac = l.cfg.authDefaults(cs.Auth)
	}
	if cs != nil && cs.Conn != nil {
		l.conn = l.cfg.connDefaults(cs.Conn)
	}
	return ac, nil
}

func (l *login) Decide(ctx context.Context, req *auth.Request) (*auth.Decision, error) {
	if l.inner == nil {
		return nil, errors.New("sshd: Decide before Begin")
	}
	return l.inner.Decide(ctx, req)
}

// Respond passes keyboard-interactive responses to the in-process
// Authority (auth.Responder).
func (l *login) Respond(ctx context.Context, responses []string) (*auth.Decision, error) {
	r, ok := l.inner.(auth.Responder)
	if !ok {
		return nil, errors.New("sshd: info response before a keyboard-interactive request")
	}
	return r.Respond(ctx, responses)
}

// Summary reports how the authentication went (auth.Summarizer), for the
// per-source penalties.
func (l *login) Summary() auth.Summary {
	var sum auth.Summary
	if s, ok := l.inner.(auth.Summarizer); ok {
		sum = s.Summary()
	}
	sum.Refused = l.refused
	return sum
}

// Close ends what the in-process Authority holds (a PAM transaction, a
// keyboard-interactive dialog).
func (l *login) Close() error {
	if c, ok := l.inner.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// PAMSession selects the PAM session of the user's processes: the PAM
// service of the login's settings when UsePAM (monitor.PAMSessioner).
func (l *login) PAMSession() *pam.Config {
	if l.auth == nil || !l.auth.UsePAM || !pam.Available {
		return nil
	}
	c := l.auth.PAM
	return &c
}

// Settings returns the connection layer's settings fixed by Begin.
func (l *login) Settings() *connection.Config { return l.conn }

func addrPort(a net.Addr) netip.AddrPort {
	if a == nil {
		return netip.AddrPort{}
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
