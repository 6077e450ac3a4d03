package load

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// silentConn is a client that connects and sends nothing.
type silentConn struct{ nc net.Conn }

func dialSilent(t *testing.T, addr string) *silentConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &silentConn{nc: nc}
}

// waitClosed reads until the server closes the connection.
func (s *silentConn) waitClosed(within time.Duration) error {
	s.nc.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, s.nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("server kept a silent connection open past LoginGraceTime")
	}
	return nil
}

// open reports whether the server still holds the connection: a read
// that times out, rather than ending, says so. It discards what it reads.
func (s *silentConn) open() bool {
	buf := make([]byte, 64<<10)
	for {
		s.nc.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		_, err := s.nc.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return true
		}
		if err != nil {
			return false
		}
	}
}
