package rawio

import (
	"net"
	"os"
)

// FileConn is net.FileConn for a socket another process accepted, leaving
// its TCP keepalives as they were. net.FileConn turns keepalives on, with
// Go's 15 s idle time, on every TCP socket it adopts, so a connection
// passed from process to process would probe an idle client four times a
// minute whatever the server's TCPKeepAlive said. The socket's options
// belong to the socket, not the descriptor: every process holding it sees
// the change.
func FileConn(f *os.File) (net.Conn, error) {
	ka, known := KeepAliveOf(f)
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	if !ka.Enable {
		ka.Idle, ka.Interval, ka.Count = -1, -1, -1 // off: the timing left alone
	}
	if tc, ok := c.(*net.TCPConn); ok && known {
		tc.SetKeepAliveConfig(ka)
	}
	return c, nil
}
