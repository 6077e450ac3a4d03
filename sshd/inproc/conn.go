package inproc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"time"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/login"
	"github.com/offload/offload/sshd/penalty"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/transport"
)

// Env is what the connections of an in-process server share. Build it
// once; connections read it and never change it. The zero values of the
// optional fields turn their feature off.
type Env struct {
	Transport *transport.Server // the key exchange, built from the server's plan (required)
	Logins    *login.Config     // what the logins decide with (required)
	Log       *slog.Logger      // the server's logger (required)

	MaxAuthRequests int           // auth.MaxRequests of the server's auth.Config
	LoginGraceTime  time.Duration // bounds key exchange and authentication; <= 0: none
	Penalties       *penalty.Tracker

	// Admit takes the slots a connection holds until it authenticates
	// (per source, MaxStartups), logging a refusal on log; release gives
	// them back. Nil admits every connection.
	Admit func(nc net.Conn, log *slog.Logger) (release func(), ok bool)

	// OnFailed is told of each connection whose key exchange or
	// authentication failed.
	OnFailed func()
	// PAMKeeper says the program can be started again as a PAM keeper
	// (it calls sshd.RunChild), which holds a login's PAM session.
	PAMKeeper bool
}

// Conn is one client connection served in this process.
type Conn struct {
	env *Env
	nc  net.Conn
	id  uint64
	log *slog.Logger

	mu sync.Mutex
	tc *transport.Conn
}

// New returns the connection over nc, whose log lines carry id and the
// peer's address.
func New(env *Env, nc net.Conn, id uint64) *Conn {
	c := &Conn{env: env, nc: nc, id: id}
	c.log = env.Log.With("conn", id, "remote", remoteString(nc))
	return c
}

// Serve serves the connection until it ends or ctx is done, and closes
// nc. A panic while serving it is recovered and logged, and the source
// penalised for a crash.
func (c *Conn) Serve(ctx context.Context) {
	defer c.recoverPanic()
	defer c.nc.Close()
	c.serve(ctx)
}

// Disconnect ends the connection: with SSH_MSG_DISCONNECT once the key
// exchange is done, by closing the socket before.
func (c *Conn) Disconnect(reason uint32, msg string) {
	c.mu.Lock()
	tc := c.tc
	c.mu.Unlock()
	if tc != nil {
		tc.Disconnect(reason, msg)
		return
	}
	c.nc.Close()
}

func (c *Conn) recoverPanic() {
	if r := recover(); r != nil {
		c.log.Error("sshd: panic serving connection", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		c.nc.Close()
		c.env.Penalties.PenalizeOutcome(c.nc.RemoteAddr(), penalty.Outcome{Crashed: true})
	}
}

func (c *Conn) serve(ctx context.Context) {
	release, ok := func() {}, true
	if c.env.Admit != nil {
		release, ok = c.env.Admit(c.nc, c.log)
	}
	if !ok {
		return
	}
	defer release()
	start := time.Now()
	grace := c.startGrace(start)
	defer grace.stop()
	tc, err := c.env.Transport.HandshakeWith(c.nc, &transport.ConnOptions{Logger: c.log, ID: c.id})
	if err != nil {
		c.failed("handshake", auth.Summary{}, grace.cause(err))
		return
	}
	c.mu.Lock()
	c.tc = tc
	c.mu.Unlock()
	c.log.Debug("sshd: key exchange done", "client_version", tc.ClientVersion(), "elapsed", time.Since(start))
	c.afterKex(ctx, tc, release, grace)
}

// afterKex runs user authentication and then the connection protocol.
func (c *Conn) afterKex(ctx context.Context, tc *transport.Conn, release func(), grace *graceTimer) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := login.New(c.env.Logins, tc.SessionID(), tc.InitialHostKey(), tc.LocalAddr(), tc.RemoteAddr())
	opts := &auth.ServeOptions{MaxRequests: c.env.MaxAuthRequests, Logger: c.env.Log, Remote: tc.RemoteAddr()}
	p, err := auth.Serve(ctx, tc, l, opts)
	if !grace.stop() && err == nil {
		err = errGraceExceeded // the login came after the connection was closed
	}
	l.Close() // the PAM transaction and any keyboard-interactive dialog
	if err != nil {
		c.failed("authentication", l.Summary(), grace.cause(err))
		tc.Close()
		return
	}
	release()
	tc.SetAuthenticated()
	c.nc.SetDeadline(time.Time{})
	c.log.Info("sshd: authenticated", "user", p.User, "method", p.Method, "key", p.KeyFingerprint)
	err = runConnectionProtocol(ctx, tc, p, c.withPAMKeeper(l))
	auth.LogSessionEnd(c.env.Log, tc.RemoteAddr(), p.User, err)
	c.logEnd("session", err)
	tc.Close()
}

// failed ends a connection that did not log in: it is logged, counted
// and its source penalised as sum and err (why it ended) say.
func (c *Conn) failed(phase string, sum auth.Summary, err error) {
	c.logEnd(phase, err)
	if c.env.OnFailed != nil {
		c.env.OnFailed()
	}
	o := penalty.Outcome{Authenticated: sum.Authenticated, Attempted: sum.Attempted,
		InvalidUser: sum.InvalidUser, Refused: sum.Refused, GraceExceeded: isTimeout(err)}
	c.env.Penalties.PenalizeOutcome(c.nc.RemoteAddr(), o)
}

// runConnectionProtocol runs the connection protocol (channels: sessions,
// forwarding, SFTP) for an authenticated user.
func runConnectionProtocol(ctx context.Context, tc *transport.Conn, p *perm.Permissions, cfg *connection.Config) error {
	ctx = connection.WithAddrs(ctx, connection.Addrs{Remote: tc.RemoteAddr(), Local: tc.LocalAddr()})
	return connection.Serve(ctx, tc, p, connection.ForClient(cfg, tc.ClientVersion()))
}

// logEnd logs how a connection ended, naming the cause.
func (c *Conn) logEnd(phase string, err error) {
	var de *transport.DisconnectError
	switch {
	case err == nil:
		c.log.Info("sshd: connection closed", "phase", phase)
	case errors.As(err, &de) && de.FromPeer:
		c.log.Info("sshd: peer disconnected", "phase", phase, "reason", transport.ReasonString(de.Reason), "err", err)
	case errors.As(err, &de):
		c.log.Warn("sshd: disconnected peer", "phase", phase, "reason", transport.ReasonString(de.Reason), "err", err)
	case errors.Is(err, context.Canceled):
		c.log.Info("sshd: connection ended by shutdown", "phase", phase)
	default:
		c.log.Warn("sshd: connection failed", "phase", phase, "err", err)
	}
}

// addrPort is a's address and port, an IPv4-mapped address unmapped.
func addrPort(a net.Addr) netip.AddrPort {
	if a == nil {
		return netip.AddrPort{}
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func remoteString(nc net.Conn) string {
	if a := nc.RemoteAddr(); a != nil {
		return a.String()
	}
	return "unknown"
}
