package transport

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// setQuickAck leaves delayed-ACK ("pingpong") mode and sends a pending
// ACK now. Linux drops back to delayed ACKs on its own later, which is why
// it is asked again after each early read. Failure only costs latency.
//
// The call is a raw one: setsockopt(TCP_QUICKACK) never blocks, and the
// runtime's syscall bookkeeping (entersyscall wakes an idle runtime's
// sysmon thread) cost more than the call itself on every early read.
func setQuickAck(fd uintptr) {
	one := int32(1)
	unix.RawSyscall6(unix.SYS_SETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_QUICKACK,
		uintptr(unsafe.Pointer(&one)), unsafe.Sizeof(one), 0)
}
