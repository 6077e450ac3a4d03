package rawio

import (
	"net"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), e
}

func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), e
}

// rawWritev writes a then b with one writev(2); either may be empty.
func rawWritev(fd uintptr, a, b []byte) (int, syscall.Errno) {
	switch {
	case len(a) == 0:
		return rawWrite(fd, b)
	case len(b) == 0:
		return rawWrite(fd, a)
	}
	iov := [2]syscall.Iovec{{Base: unsafe.SliceData(a)}, {Base: unsafe.SliceData(b)}}
	iov[0].SetLen(len(a))
	iov[1].SetLen(len(b))
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), 2)
	return int(n), e
}

// nonBlocking reports whether rc's descriptor has O_NONBLOCK set.
func nonBlocking(rc syscall.RawConn) bool {
	flags := 0
	var errno syscall.Errno
	err := rc.Control(func(fd uintptr) {
		var r uintptr
		r, _, errno = syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		flags = int(r)
	})
	return err == nil && errno == 0 && flags&syscall.O_NONBLOCK != 0
}

// TCPBytes returns the bytes a TCP connection has received and had
// acknowledged, as the kernel counts them (TCP_INFO); ok is false for
// other connections.
func TCPBytes(nc any) (in, out uint64, ok bool) {
	sc, isSC := nc.(syscall.Conn)
	if !isSC {
		return 0, 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var info *unix.TCPInfo
	rc.Control(func(fd uintptr) { info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if err != nil || info == nil {
		return 0, 0, false
	}
	return info.Bytes_received, info.Bytes_acked, true
}

// growPipe sets the capacity of the pipe behind rc to n bytes.
func growPipe(rc syscall.RawConn, n int) error {
	if n <= 0 || n > 1<<30 { // the kernel reads an unsigned int
		return syscall.EINVAL
	}
	var errno syscall.Errno
	err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.RawSyscall(syscall.SYS_FCNTL, fd, unix.F_SETPIPE_SZ, uintptr(n))
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// KeepAliveOf reads a TCP socket's keepalive setting: whether it is on,
// and its timing (the kernel reports the system's when the socket has
// none of its own). ok is false when c is not a TCP socket.
func KeepAliveOf(c syscall.Conn) (ka net.KeepAliveConfig, ok bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return ka, false
	}
	var on, idle, intvl, cnt int
	rc.Control(func(fd uintptr) {
		get := func(level, opt int) int {
			v, e := unix.GetsockoptInt(int(fd), level, opt)
			if e != nil && err == nil {
				err = e
			}
			return v
		}
		on = get(unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		idle = get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
		intvl = get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
		cnt = get(unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
	})
	if err != nil {
		return ka, false
	}
	return net.KeepAliveConfig{Enable: on != 0, Idle: time.Duration(idle) * time.Second,
		Interval: time.Duration(intvl) * time.Second, Count: cnt}, true
}
