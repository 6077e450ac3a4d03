package ipc

import (
	"io"
	"syscall"
	"unsafe"
)

// The monitor and its children exchange a few short messages per login,
// and each wakes a process that was idle. A send or receive through the
// net package enters the runtime's system-call bookkeeping, whose first
// call after idleness also wakes the process's sysmon thread, which then
// polls every 20 µs until the process is idle again: at 16 concurrent
// logins that was a fifth of a pre-auth worker's CPU. These calls never
// block (the socket is non-blocking; the poller waits), so they are made
// raw, as internal/rawio does for the SSH sockets.

// recvmsg reads one datagram and its control data.
func (p *Peer) recvmsg(buf, oob []byte) (n, oobn, flags int, err error) {
	var errno syscall.Errno
	rerr := p.rc.Read(func(fd uintptr) bool {
		p.rmu.Lock()
		defer p.rmu.Unlock()
		if p.detached {
			errno = syscall.ESHUTDOWN
			return true
		}
		n, oobn, flags, errno = rawRecvmsg(fd, buf, oob)
		return errno != syscall.EAGAIN
	})
	switch {
	case rerr != nil:
		return 0, 0, 0, rerr
	case errno != 0:
		return 0, 0, 0, errno
	case n == 0 && oobn == 0:
		return 0, 0, 0, io.EOF
	}
	return n, oobn, flags, nil
}

func rawRecvmsg(fd uintptr, buf, oob []byte) (n, oobn, flags int, errno syscall.Errno) {
	var iov syscall.Iovec
	msg := msghdr(&iov, buf, oob)
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&msg)), syscall.MSG_CMSG_CLOEXEC)
		if e != syscall.EINTR {
			return int(r), int(msg.Controllen), int(msg.Flags), e
		}
	}
}

// sendmsg writes one datagram with its control data; p.wmu is held.
func (p *Peer) sendmsg(b, oob []byte) error {
	var errno syscall.Errno
	werr := p.rc.Write(func(fd uintptr) bool {
		errno = rawSendmsg(fd, b, oob)
		return errno != syscall.EAGAIN
	})
	if werr != nil {
		return werr
	}
	if errno != 0 {
		return errno
	}
	return nil
}

func rawSendmsg(fd uintptr, b, oob []byte) syscall.Errno {
	var iov syscall.Iovec
	msg := msghdr(&iov, b, oob)
	for {
		_, _, e := syscall.RawSyscall(syscall.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&msg)), syscall.MSG_NOSIGNAL)
		if e != syscall.EINTR {
			return e
		}
	}
}

// msghdr describes one datagram of b with control data oob, through iov.
func msghdr(iov *syscall.Iovec, b, oob []byte) syscall.Msghdr {
	*iov = syscall.Iovec{Base: unsafe.SliceData(b)}
	iov.SetLen(len(b))
	msg := syscall.Msghdr{Iov: iov, Iovlen: 1}
	if len(oob) > 0 {
		msg.Control = unsafe.SliceData(oob)
		msg.SetControllen(len(oob))
	}
	return msg
}
