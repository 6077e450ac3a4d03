package connection

import (
	"errors"
	"io"
	"sync"
)

// pktQueue is one direction of an in-memory packet pipe. It recycles
// buffers so that benchmarks measure the connection layer, not the pipe.
type pktQueue struct {
	mu     sync.Mutex
	cond   sync.Cond
	items  [][]byte
	head   int
	free   [][]byte
	last   []byte
	closed bool
	onWait func() // see wire.ReadWaiter
	paused bool   // get waits: tests queue a burst
}

// pause makes get wait until resume, so that what is put meanwhile is
// read as one burst.
func (q *pktQueue) pause() {
	q.mu.Lock()
	q.paused = true
	q.mu.Unlock()
}

func (q *pktQueue) resume() {
	q.mu.Lock()
	q.paused = false
	q.cond.Broadcast()
	q.mu.Unlock()
}

func newPktQueue() *pktQueue {
	q := &pktQueue{}
	q.cond.L = &q.mu
	return q
}

var errPipeClosed = errors.New("memconn: closed")

func (q *pktQueue) put(p []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errPipeClosed
	}
	var b []byte
	if n := len(q.free); n > 0 {
		b, q.free = q.free[n-1], q.free[:n-1]
	}
	q.items = append(q.items, append(b[:0], p...))
	q.cond.Signal()
	return nil
}

func (q *pktQueue) get() ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.last != nil {
		q.free = append(q.free, q.last)
		q.last = nil
	}
	for (q.head == len(q.items) || q.paused) && !q.closed {
		if f := q.onWait; f != nil {
			q.mu.Unlock()
			f()
			q.mu.Lock()
			if (q.head < len(q.items) && !q.paused) || q.closed {
				break
			}
		}
		q.cond.Wait()
	}
	if q.head == len(q.items) {
		return nil, io.EOF
	}
	p := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	q.last = p
	return p, nil
}

func (q *pktQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// memConn is one end of an in-memory wire.PacketConn pair.
type memConn struct {
	in, out    *pktQueue
	mu         sync.Mutex
	disconnect uint32 // reason sent, 0 if none
	disconnMsg string
}

func memPipe() (server, client *memConn) {
	a, b := newPktQueue(), newPktQueue()
	return &memConn{in: a, out: b}, &memConn{in: b, out: a}
}

func (c *memConn) ReadPacket() ([]byte, error) { return c.in.get() }
func (c *memConn) WritePacket(p []byte) error  { return c.out.put(p) }
func (c *memConn) SessionID() []byte           { return []byte("memconn") }

// OnReadWait implements wire.ReadWaiter, so the connection layer batches
// channel data as it does over the transport.
func (c *memConn) OnReadWait(f func()) {
	c.in.mu.Lock()
	c.in.onWait = f
	c.in.mu.Unlock()
}

func (c *memConn) Close() error {
	c.in.close()
	c.out.close()
	return nil
}

// Disconnect records the reason, as a transport would send it.
func (c *memConn) Disconnect(reason uint32, msg string) error {
	c.mu.Lock()
	c.disconnect, c.disconnMsg = reason, msg
	c.mu.Unlock()
	return c.Close()
}

func (c *memConn) disconnected() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.disconnect
}

// plainConn is a memConn without wire.ReadWaiter: the connection layer
// then writes each data packet as it comes.
type plainConn struct{ m *memConn }

func (c plainConn) ReadPacket() ([]byte, error)                { return c.m.ReadPacket() }
func (c plainConn) WritePacket(p []byte) error                 { return c.m.WritePacket(p) }
func (c plainConn) SessionID() []byte                          { return c.m.SessionID() }
func (c plainConn) Close() error                               { return c.m.Close() }
func (c plainConn) Disconnect(reason uint32, msg string) error { return c.m.Disconnect(reason, msg) }
