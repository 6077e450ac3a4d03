package preauth

import (
	"errors"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/offload/offload/sshd/ipc"
)

// openBusyTable maps the table the monitor passed (ipc.BusyFDEnv); nil
// without one (the worker then marks nothing).
func openBusyTable() (*ipc.BusyTable, error) {
	v := os.Getenv(ipc.BusyFDEnv)
	if v == "" {
		return nil, nil
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, errors.New("pre-auth worker: bad " + ipc.BusyFDEnv)
	}
	return ipc.OpenBusyTable(os.NewFile(uintptr(fd), "offload-busy"))
}

// markedConn marks its connection busy in the worker's BusyTable from
// each read that returned bytes until the next read: while the worker
// works on what the client sent.
type markedConn struct {
	net.Conn
	slot *ipc.BusySlot
}

func (c *markedConn) Read(p []byte) (int, error) {
	c.slot.Idle()
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.slot.Busy()
	}
	return n, err
}

// SyscallConn is the socket's, for the transport's socket options.
func (c *markedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("pre-auth worker: not a socket")
	}
	return sc.SyscallConn()
}
