// Package login is one connection's login: once the user of its first
// authentication request is known, it fixes the connection's settings
// (the server's, or what Config.PerConnection says for that user and
// the connection's endpoints: sshd_config's Match), checks and expands
// its ChrootDirectory, and authenticates with an auth.Authority under
// those settings.
//
// # Where it runs
//
// A Login is the monitor's monitor.Login in the separated mode (the
// pre-auth worker asks, the monitor decides) and the auth.Authority of
// the in-process mode. Either way it runs in the process that holds the
// configuration and the account decisions.
package login

import (
	"context"
	"errors"
	"log/slog"
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

// Config is what the logins of a server share.
type Config struct {
	// Auth and Conn are the server's settings.
	Auth *auth.Config
	Conn *connection.Config
	// PerConnection, when set, is asked for the settings of each
	// connection once the user of its first authentication request is
	// known; a nil field of its answer keeps the server's. An error
	// refuses the connection (ErrRefuseConnection: by configuration).
	PerConnection func(ConnInfo) (*ConnSettings, error)
	// Logger receives the refusals of a ChrootDirectory.
	Logger *slog.Logger
}

// Login is a connection's authentication: once Begin knows the user it
// fixes the connection's settings (Config.PerConnection) and runs the
// in-process auth.Authority with them.
type Login struct {
	auth          *auth.Config // the settings Begin chose
	cfg           *Config
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
var ErrRefuseConnection = errors.New("login: connection refused by configuration")

// New is the login of the connection whose first key exchange has
// sessionID and was signed by hostKey (its wire form).
func New(cfg *Config, sessionID, hostKey []byte, local, remote net.Addr) *Login {
	return &Login{cfg: cfg, sessionID: sessionID, hostKey: hostKey, local: local, remote: remote, conn: cfg.Conn}
}

var errLoginBegun = errors.New("login: authentication already begun")

func (l *Login) Begin(ctx context.Context, user, service string) (string, error) {
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
func (l *Login) settingsFor(user string) (*auth.Config, error) {
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
		ac = cs.Auth
	}
	if cs != nil && cs.Conn != nil {
		l.conn = cs.Conn
	}
	return ac, nil
}

func (l *Login) Decide(ctx context.Context, req *auth.Request) (*auth.Decision, error) {
	if l.inner == nil {
		return nil, errors.New("login: Decide before Begin")
	}
	return l.inner.Decide(ctx, req)
}

// Respond passes keyboard-interactive responses to the in-process
// Authority (auth.Responder).
func (l *Login) Respond(ctx context.Context, responses []string) (*auth.Decision, error) {
	r, ok := l.inner.(auth.Responder)
	if !ok {
		return nil, errors.New("login: info response before a keyboard-interactive request")
	}
	return r.Respond(ctx, responses)
}

// Summary reports how the authentication went (auth.Summarizer), for the
// per-source penalties.
func (l *Login) Summary() auth.Summary {
	var sum auth.Summary
	if s, ok := l.inner.(auth.Summarizer); ok {
		sum = s.Summary()
	}
	sum.Refused = l.refused
	return sum
}

// Close ends what the in-process Authority holds (a PAM transaction, a
// keyboard-interactive dialog).
func (l *Login) Close() error {
	if c, ok := l.inner.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// PAMSession selects the PAM session of the user's processes: the PAM
// service of the login's settings when UsePAM (monitor.PAMSessioner).
func (l *Login) PAMSession() *pam.Config {
	if l.auth == nil || !l.auth.UsePAM || !pam.Available {
		return nil
	}
	c := l.auth.PAM
	return &c
}

// Settings returns the connection layer's settings fixed by Begin.
func (l *Login) Settings() *connection.Config { return l.conn }

func addrPort(a net.Addr) netip.AddrPort {
	if a == nil {
		return netip.AddrPort{}
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
