//go:build !linux

package rawio

import (
	"net"
	"syscall"
)

// Without a raw path, these are ordinary system calls.

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	return syscall.EIO
}

func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func rawWritev(fd uintptr, a, b []byte) (int, syscall.Errno) {
	n, e := rawWrite(fd, a)
	if e != 0 || n < len(a) || len(b) == 0 {
		return n, e
	}
	k, e := rawWrite(fd, b)
	if e != 0 {
		return n, 0
	}
	return n + k, 0
}

// nonBlocking is true: without raw calls a blocking descriptor only
// blocks its thread, as an ordinary read would.
func nonBlocking(syscall.RawConn) bool { return true }

// TCPBytes is not available here.
func TCPBytes(nc any) (in, out uint64, ok bool) { return 0, 0, false }

// growPipe is not available here: pipes keep their size.
func growPipe(syscall.RawConn, int) error { return syscall.ENOTSUP }

// KeepAliveOf is not available here: FileConn is net.FileConn.
func KeepAliveOf(syscall.Conn) (net.KeepAliveConfig, bool) { return net.KeepAliveConfig{}, false }
