package sshd

import (
	"errors"
	"log/slog"
	"net"
	"os"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/monitor"
	"github.com/offload/offload/sshd/penalty"
	"github.com/offload/offload/sshd/sshlog"
)

// admitSource asks Config.Penalties whether the connection's source may
// connect; a refused client gets OpenSSH's text and the connection ends.
func (c *conn) admitSource() (*penalty.Slot, bool) {
	return c.srv.admitSource(c.nc, c.log)
}

func (s *Server) admitSource(nc net.Conn, log *slog.Logger) (*penalty.Slot, bool) {
	t := s.cfg.Penalties
	if t == nil {
		return nil, true
	}
	remote, local := addrPort(nc.RemoteAddr()), addrPort(nc.LocalAddr())
	slot, err := t.Admit(remote.Addr())
	var r *penalty.Refused
	if errors.As(err, &r) {
		log.Info(penalty.DropLine(int(s.startups.Load()), remote, local, r.Reason), sshlog.Worded())
		nc.Write([]byte(penalty.RefusalText))
		return nil, false
	}
	return slot, true
}

// penalizeSeparated tells Config.Penalties how a separated server's
// connection ended.
func (s *Server) penalizeSeparated(e monitor.ConnEnd) {
	t := s.cfg.Penalties
	if t == nil {
		return
	}
	o := penalty.Outcome{Authenticated: e.Auth.Authenticated, Attempted: e.Auth.Attempted,
		InvalidUser: e.Auth.InvalidUser, Refused: e.Auth.Refused, GraceExceeded: e.Outcome == ipc.OutcomeGrace,
		Crashed: e.Outcome == ipc.OutcomeCrash, Lost: e.Outcome == ipc.OutcomeLost}
	if k, ok := penalty.Classify(o); ok {
		t.Penalize(addrPort(e.Remote).Addr(), k)
	}
}

// penalize tells Config.Penalties how a connection that did not log in
// ended: sum is its authentication's summary, err why it ended.
func (c *conn) penalize(sum auth.Summary, err error) {
	t := c.srv.cfg.Penalties
	if t == nil {
		return
	}
	o := penalty.Outcome{Authenticated: sum.Authenticated, Attempted: sum.Attempted,
		InvalidUser: sum.InvalidUser, Refused: sum.Refused, GraceExceeded: isTimeout(err)}
	if k, ok := penalty.Classify(o); ok {
		t.Penalize(addrPort(c.nc.RemoteAddr()).Addr(), k)
	}
}

// isTimeout reports whether err is the LoginGraceTime deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// chainRelease runs both releases.
func chainRelease(a, b func()) func() {
	return func() { a(); b() }
}
