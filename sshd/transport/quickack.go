package transport

import (
	"net"
	"syscall"
)

// quickAckPackets is how many of a connection's first packets are each
// followed by a request for an immediate TCP ACK. That covers the version
// exchange, the first key exchange, authentication and the session set-up,
// and stops before bulk data, where the syscall would only cost.
const quickAckPackets = 48

// Why: OpenSSH's client leaves Nagle's algorithm on for non-interactive
// sessions, so a small packet it sends right after a larger one waits for
// the ACK of the first. When offload has nothing to send back (its KEXINIT
// went out before the client's arrived; an env request needs no reply),
// Linux delays that ACK by up to 40 ms, and the client's next packet (its
// ECDH_INIT, its exec request) waits with it. OpenSSH's sshd hits the same
// stall; asking for the ACK now takes it out of every login.

// quickAcker asks the kernel to acknowledge what has been read at once.
type quickAcker struct {
	rc   syscall.RawConn // nil when the connection is not a socket
	left int
}

func newQuickAcker(nc net.Conn) quickAcker {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return quickAcker{}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return quickAcker{}
	}
	return quickAcker{rc: rc, left: quickAckPackets}
}

// ack requests the ACK after a read, for the first quickAckPackets reads.
func (q *quickAcker) ack() {
	if q.rc == nil || q.left <= 0 {
		return
	}
	q.left--
	q.rc.Control(setQuickAck)
}
