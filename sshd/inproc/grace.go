package inproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/offload/offload/sshd/sshlog"
)

// errGraceExceeded: LoginGraceTime ran out before the login completed.
var errGraceExceeded = fmt.Errorf("sshd: LoginGraceTime exceeded: %w", os.ErrDeadlineExceeded)

// isTimeout reports whether err is the LoginGraceTime deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// graceTimer bounds the time to authenticate (LoginGraceTime) in the
// in-process mode. The socket's deadline stops reads and writes, but not
// an Authority that blocks without reading — a PAM module waiting on a
// server that does not answer, say — which would hold the client past
// the grace time; the timer closes the socket then, as OpenSSH's alarm
// ends its whole per-connection process. The blocked call is left to
// return by itself.
type graceTimer struct {
	t     *time.Timer
	fired atomic.Bool
}

// startGrace sets the socket deadline and starts the timer; with no
// LoginGraceTime it does nothing.
func (c *Conn) startGrace(start time.Time) *graceTimer {
	g := &graceTimer{}
	d := c.env.LoginGraceTime
	if d <= 0 {
		return g
	}
	c.nc.SetDeadline(start.Add(d))
	g.t = time.AfterFunc(time.Until(start.Add(d)), func() {
		g.fired.Store(true)
		addr := addrPort(c.nc.RemoteAddr())
		c.log.Info(fmt.Sprintf("Timeout before authentication for %s port %d", addr.Addr(), addr.Port()), sshlog.Worded())
		c.nc.Close()
	})
	return g
}

// stop stops the timer; it reports false when the timer had fired (the
// connection is closed) or had been stopped before.
func (g *graceTimer) stop() bool {
	return g.t == nil || g.t.Stop()
}

// cause is err, or errGraceExceeded when the timer closed the
// connection (for the grace-exceeded penalty).
func (g *graceTimer) cause(err error) error {
	if g.fired.Load() && !errors.Is(err, os.ErrDeadlineExceeded) {
		return errGraceExceeded
	}
	return err
}
