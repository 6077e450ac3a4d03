package rawio

import (
	"syscall"
	"unsafe"
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
