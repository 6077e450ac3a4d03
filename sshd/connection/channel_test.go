package connection

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/offload/offload/sshd/wire"
)

// TestChannelReadStream feeds data messages of random sizes, empty ones
// included, from the read loop to a concurrent reader with a small, a
// medium and a large buffer: the stream arrives intact and in order, and
// EOF comes only after the peer's EOF.
func TestChannelReadStream(t *testing.T) {
	for _, bufSize := range []int{7, 4096, 100_000} {
		m, c := benchChannel(t)
		c.inWindow = math.MaxUint32
		rng := rand.New(rand.NewPCG(1, uint64(bufSize)))
		var want bytes.Buffer
		got := make(chan []byte)
		go func() {
			var all []byte
			buf := make([]byte, bufSize)
			for {
				n, err := c.Read(buf)
				all = append(all, buf[:n]...)
				if err == io.EOF {
					got <- all
					return
				}
			}
		}()
		for i := range 600 {
			d := make([]byte, rng.IntN(DefaultMaxPacket+1))
			if i%7 == 0 {
				d = d[:0]
			}
			for j := range d {
				d[j] = byte(rng.Uint32())
			}
			want.Write(d)
			if err := m.dispatch(wire.AppendBytes(appendChannelMsg(nil, wire.MsgChannelData, 0), d)); err != nil {
				t.Fatal(err)
			}
		}
		m.dispatch(appendChannelMsg(nil, wire.MsgChannelEOF, 0))
		if all := <-got; !bytes.Equal(all, want.Bytes()) {
			t.Errorf("buffer %d: read %d bytes, want %d (or different bytes)", bufSize, len(all), want.Len())
		}
	}
}

// growReader hands out chunks of src as large as the caller's buffer,
// as a pipe with a fast writer does, and records GrowPipe calls.
type growReader struct {
	src   []byte
	grows []int
	reads []int
}

func (g *growReader) Read(p []byte) (int, error) {
	if len(g.src) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.src)
	g.src = g.src[n:]
	g.reads = append(g.reads, len(p))
	return n, nil
}

func (g *growReader) GrowPipe(n int) error { g.grows = append(g.grows, n); return nil }

// TestReadFromGrows: a program that fills every read moves the channel
// to bulkChunk reads and asks its pipe to grow once; every byte still
// goes out in order, in packets no larger than the peer's maximum.
func TestReadFromGrows(t *testing.T) {
	_, c := benchChannel(t)
	rec := &recordConn{}
	c.m.pc = rec
	want := make([]byte, 3*bulkChunk+123)
	for i := range want {
		want[i] = byte(i * 7)
	}
	g := &growReader{src: want}
	if _, err := c.stdout.ReadFrom(g); err != nil {
		t.Fatal(err)
	}
	if len(g.grows) != 1 || g.grows[0] != bulkPipe {
		t.Errorf("GrowPipe calls %v, want one of %d", g.grows, bulkPipe)
	}
	if first, last := g.reads[0], g.reads[len(g.reads)-1]; first >= bulkChunk || last < bulkChunk || len(g.reads) != 4 {
		t.Errorf("read sizes %v: want one under %d, then reads of at least that", g.reads, bulkChunk)
	}
	if got := rec.data(t, c.peerMax); !bytes.Equal(got, want) {
		t.Errorf("sent %d bytes, want the %d read (or different bytes)", len(got), len(want))
	}
}

// recordConn keeps a copy of every packet written.
type recordConn struct {
	memConn
	mu   sync.Mutex
	pkts [][]byte
}

func (r *recordConn) WritePacket(p []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pkts = append(r.pkts, append([]byte(nil), p...))
	return nil
}

// data joins the payloads of the DATA packets written, checking that
// none carries more than max bytes.
func (r *recordConn) data(t *testing.T, max uint32) []byte {
	t.Helper()
	var all []byte
	for _, p := range r.pkts {
		if p[0] != wire.MsgChannelData {
			t.Fatalf("message %d, want DATA", p[0])
		}
		d := p[dataHeaderLen:]
		if uint32(len(d)) > max {
			t.Fatalf("a DATA packet carries %d bytes, more than %d", len(d), max)
		}
		all = append(all, d...)
	}
	return all
}
