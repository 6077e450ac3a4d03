package connection

import "sync"

// batchLimit bounds the bytes a batchWriter buffers before Write blocks.
const batchLimit = 256 << 10

// batchWriter packs many small writes into full channel packets without
// timers: writers append to a buffer and one sender goroutine sends
// whatever has accumulated. When the sender keeps up, each write goes out
// at once; when writers are faster (an SFTP server answering 64 queued
// reads), their bytes share packets, as in OpenSSH's channel buffers.
type batchWriter struct {
	w      *dataWriter
	mu     sync.Mutex
	cond   sync.Cond
	buf    []byte // header room, then pending bytes
	spare  []byte
	closed bool
	err    error
	done   chan struct{}
}

func newBatchWriter(w *dataWriter) *batchWriter {
	b := &batchWriter{w: w, done: make(chan struct{})}
	b.cond.L = &b.mu
	b.buf = make([]byte, extDataHeaderLen, extDataHeaderLen+batchLimit)
	b.spare = make([]byte, extDataHeaderLen, extDataHeaderLen+batchLimit)
	go b.run()
	return b
}

func (b *batchWriter) Write(p []byte) (int, error) { return b.writeBuffers(p, nil) }

// writeBuffers queues a then b; it blocks while the buffer is full.
func (b *batchWriter) writeBuffers(a, c []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(a) + len(c)
	for b.err == nil && !b.closed && len(b.buf) > extDataHeaderLen && len(b.buf)+n > cap(b.buf) {
		b.cond.Wait()
	}
	if b.err != nil || b.closed {
		return 0, b.failure()
	}
	b.buf = append(append(b.buf, a...), c...)
	b.cond.Broadcast()
	return n, nil
}

func (b *batchWriter) failure() error {
	if b.err != nil {
		return b.err
	}
	return ErrClosed
}

// run sends the accumulated bytes until closed and drained.
func (b *batchWriter) run() {
	defer close(b.done)
	for {
		b.mu.Lock()
		for len(b.buf) == extDataHeaderLen && !b.closed && b.err == nil {
			b.cond.Wait()
		}
		if len(b.buf) == extDataHeaderLen || b.err != nil {
			b.mu.Unlock()
			return
		}
		out := b.buf
		b.buf, b.spare = b.spare[:extDataHeaderLen], nil
		b.cond.Broadcast()
		b.mu.Unlock()
		err := b.sendOut(out)
		b.mu.Lock()
		b.spare, b.err = out[:extDataHeaderLen], err
		b.cond.Broadcast()
		b.mu.Unlock()
	}
}

func (b *batchWriter) sendOut(out []byte) error {
	b.w.mu.Lock()
	defer b.w.mu.Unlock()
	return b.w.sendIn(out, extDataHeaderLen, len(out)-extDataHeaderLen)
}

// Close flushes what is queued and stops the sender.
func (b *batchWriter) Close() error {
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
