package transport

import "golang.org/x/sys/unix"

// setQuickAck leaves delayed-ACK ("pingpong") mode and sends a pending
// ACK now. Linux drops back to delayed ACKs on its own later, which is why
// it is asked again after each early read. Failure only costs latency.
func setQuickAck(fd uintptr) {
	unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
}
