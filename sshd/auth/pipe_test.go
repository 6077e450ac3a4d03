package auth

import (
	"errors"
	"io"
	"net"
	"sync"

	"github.com/offload/offload/sshd/wire"
)

// memConn is one end of an in-memory wire.PacketConn pair.
type memConn struct {
	r, w       chan []byte
	closed     chan struct{}
	peerClosed chan struct{}
	once       sync.Once
	sid        []byte

	mu         sync.Mutex
	disconnect *uint32 // reason passed to Disconnect
	reads      uint32  // packets ReadPacket returned: the next sequence number
}

// memPipe returns a connected pair; server implements wire.Disconnector.
func memPipe(sessionID []byte) (server, client *memConn) {
	a, b := make(chan []byte, 64), make(chan []byte, 64)
	ca, cb := make(chan struct{}), make(chan struct{})
	server = &memConn{r: a, w: b, closed: ca, peerClosed: cb, sid: sessionID}
	client = &memConn{r: b, w: a, closed: cb, peerClosed: ca, sid: sessionID}
	return server, client
}

func (c *memConn) ReadPacket() ([]byte, error) {
	p, err := c.readPacket()
	if err == nil {
		c.mu.Lock()
		c.reads++
		c.mu.Unlock()
	}
	return p, err
}

// Unimplemented answers the last packet read, as the transport does.
func (c *memConn) Unimplemented() error {
	c.mu.Lock()
	seq := c.reads - 1
	c.mu.Unlock()
	return c.WritePacket(wire.AppendUint32([]byte{wire.MsgUnimplemented}, seq))
}

func (c *memConn) readPacket() ([]byte, error) {
	select {
	case p := <-c.r:
		return p, nil
	default:
	}
	select {
	case p := <-c.r:
		return p, nil
	case <-c.closed:
		return nil, net.ErrClosed
	case <-c.peerClosed:
		select {
		case p := <-c.r:
			return p, nil
		default:
			return nil, io.EOF
		}
	}
}

func (c *memConn) WritePacket(p []byte) error {
	cp := append([]byte(nil), p...)
	select {
	case <-c.closed:
		return net.ErrClosed
	case <-c.peerClosed:
		return io.ErrClosedPipe
	case c.w <- cp:
		return nil
	}
}

func (c *memConn) SessionID() []byte { return c.sid }

func (c *memConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// Disconnect sends SSH_MSG_DISCONNECT to the peer and closes.
func (c *memConn) Disconnect(reason uint32, msg string) error {
	c.mu.Lock()
	c.disconnect = &reason
	c.mu.Unlock()
	b := wire.AppendUint32([]byte{wire.MsgDisconnect}, reason)
	b = wire.AppendString(b, msg)
	b = wire.AppendString(b, "")
	err := c.WritePacket(b)
	return errors.Join(err, c.Close())
}

func (c *memConn) disconnectReason() (uint32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disconnect == nil {
		return 0, false
	}
	return *c.disconnect, true
}

// plainConn hides Disconnect.
type plainConn struct{ wire.PacketConn }
