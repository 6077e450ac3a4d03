package wire

// PacketConn is the contract between offload's SSH layers: the transport
// implements it, user authentication and the connection layer run over it.
//
// ReadPacket returns the next payload (message number first) that is not a
// transport message: the transport answers IGNORE, DEBUG, UNIMPLEMENTED,
// key re-exchange and ext-info itself. The returned slice is valid only until
// the next ReadPacket. ReadPacket is called from one goroutine at a time.
//
// WritePacket sends one payload. It is safe for concurrent use, may block
// while a key exchange is in progress (with a bounded queue) and does not
// retain payload after it returns, so callers reuse their buffers.
//
// SessionID is the exchange hash of the first key exchange.
type PacketConn interface {
	ReadPacket() ([]byte, error)
	WritePacket(payload []byte) error
	SessionID() []byte
	Close() error
}

// Disconnector is implemented by PacketConns that can send
// SSH_MSG_DISCONNECT with a reason code before closing.
type Disconnector interface {
	Disconnect(reason uint32, message string) error
}

// Unimplementer is implemented by PacketConns that can answer the packet
// ReadPacket returned last with SSH_MSG_UNIMPLEMENTED (RFC 4253 §11.4),
// which is owed to every message number the receiver does not know.
type Unimplementer interface {
	Unimplemented() error
}

// ReadWaiter is implemented by PacketConns that can tell their reader
// when ReadPacket is about to wait for the network: OnReadWait makes
// ReadPacket call f, on the reading goroutine, just before such a wait
// (never when the next packet has already arrived). A reader that holds
// back work to batch it does that work in f. f must not call ReadPacket
// or wait for the peer.
type ReadWaiter interface {
	OnReadWait(f func())
}

// Known reports whether t is a message number the SSH RFCs and OpenSSH's
// PROTOCOL define or reserve for a known purpose (transport 1-49, user
// authentication 50-79, connection 80-100); the connection layer answers
// the others, and the local-extension range 128-255, with
// SSH_MSG_UNIMPLEMENTED.
func Known(t byte) bool {
	switch {
	case t >= MsgDisconnect && t <= MsgExtInfo:
		return true
	case t >= MsgKexInit && t < MsgUserAuthRequest:
		return true // 20-29 algorithm negotiation, 30-49 kex methods
	case t >= MsgUserAuthRequest && t < MsgGlobalRequest:
		return true // 50-59 generic, 60-79 method-specific
	case t >= MsgGlobalRequest && t <= MsgRequestFailure:
		return true
	case t >= MsgChannelOpen && t <= MsgChannelFailure:
		return true
	}
	return false
}
