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
