package connection

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
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
			d := make([]byte, rng.IntN(40_000))
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
