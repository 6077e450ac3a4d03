package testenv

import (
	"context"
	"net"
	"testing"
	"time"
)

// StartupDeadline is how long a test waits for a server it started to
// come up: until shortly before the test binary's own deadline (go test
// -timeout), or two minutes without one. A server's start is an event,
// not a duration: beside two busy loops and other test binaries a daemon
// that starts in 50 ms on a quiet machine took over 10 s (cipher scores,
// key loading, re-executed workers), and the few seconds tests used to
// allow made them fail by chance. A server that never comes up still
// fails, with its log, before the binary's timeout kills everything.
func StartupDeadline(t testing.TB) time.Time {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			if margin := time.Until(dl) / 10; margin < time.Minute {
				return dl.Add(-margin)
			}
			return dl.Add(-time.Minute)
		}
	}
	return time.Now().Add(2 * time.Minute)
}

// WaitUntil polls cond every 20 ms until it holds (true) or the startup
// deadline passes (false).
func WaitUntil(t testing.TB, cond func() bool) bool {
	for deadline := StartupDeadline(t); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// Listening reports whether something accepts TCP connections at addr.
func Listening(addr string) bool { return accepts("tcp", addr) }

// SocketListening reports whether a Unix socket accepts a connection. Its
// file alone proves nothing: it appears at bind, before the server
// listens, and a client that connects in between is refused.
func SocketListening(path string) bool { return accepts("unix", path) }

func accepts(network, addr string) bool {
	c, err := net.Dial(network, addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Context is the context of a step a test waits for, such as a client's
// run or a login: it ends at the startup deadline, so that a step that
// hangs fails the test while a slow one on a loaded machine does not.
func Context(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithDeadline(context.Background(), StartupDeadline(t))
}

// Timeout fires at the startup deadline: the bound of a select that
// waits for an event (a connection ending, a reply), so that only an
// event that never comes fails the test.
func Timeout(t testing.TB) <-chan time.Time {
	return time.After(time.Until(StartupDeadline(t)))
}
