package sftp

import (
	"bytes"
	"io"
	"sync"
	"testing"

	pkgsftp "github.com/pkg/sftp"

	"github.com/offload/offload/internal/testenv"
)

// bufPipe is one direction of an in-memory channel: writes never block,
// reads wait for data or the end.
type bufPipe struct {
	mu     sync.Mutex
	cond   sync.Cond
	buf    bytes.Buffer
	closed bool
}

func newBufPipe() *bufPipe {
	p := &bufPipe{}
	p.cond.L = &p.mu
	return p
}

func (p *bufPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, io.ErrClosedPipe
	}
	p.buf.Write(b)
	p.cond.Broadcast()
	return len(b), nil
}

func (p *bufPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.buf.Len() == 0 && !p.closed {
		p.cond.Wait()
	}
	if p.buf.Len() == 0 {
		return 0, io.EOF
	}
	return p.buf.Read(b)
}

func (p *bufPipe) Close() error {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	return nil
}

func (p *bufPipe) buffered() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Len() > 0
}

// memChannel is the server's side of an in-memory SSH channel: it is a
// Buffered PacketWriter, as the connection layer's channels are.
type memChannel struct {
	in, out *bufPipe
}

func (c memChannel) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c memChannel) Write(p []byte) (int, error) { return c.out.Write(p) }
func (c memChannel) Buffered() bool              { return c.in.buffered() }
func (c memChannel) PacketSize() int             { return 32768 }
func (c memChannel) Headroom() int               { return 9 }

func (c memChannel) WritePackets(buf []byte, off, n int) error {
	for n > 0 {
		k := min(n, 32768)
		if _, err := c.out.Write(buf[off : off+k]); err != nil {
			return err
		}
		off += k
		n -= k
	}
	return nil
}

// clientEnd is the client's side.
type clientEnd struct{ in, out *bufPipe }

func (c clientEnd) Read(p []byte) (int, error)  { return c.out.Read(p) }
func (c clientEnd) Write(p []byte) (int, error) { return c.in.Write(p) }
func (c clientEnd) Close() error                { return c.in.Close() }

// newClient serves cfg over an in-memory channel and returns a pkg/sftp
// client of it; the test fails if the server returns an error.
func newClient(t testing.TB, cfg *Config, opts ...pkgsftp.ClientOption) *pkgsftp.Client {
	t.Helper()
	in, out := newBufPipe(), newBufPipe()
	done := make(chan error, 1)
	go func() {
		err := Serve(memChannel{in, out}, cfg)
		out.Close()
		done <- err
	}()
	ce := clientEnd{in, out}
	sc, err := pkgsftp.NewClientPipe(ce, ce, opts...)
	if err != nil {
		t.Fatalf("sftp client: %v", err)
	}
	t.Cleanup(func() {
		sc.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server: %v", err)
			}
		case <-testenv.Timeout(t):
			t.Errorf("server did not end after the client closed")
		}
	})
	return sc
}
