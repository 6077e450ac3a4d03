package transport

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// chunkReader returns one chunk per Read, as a socket returns what has
// arrived so far.
type chunkReader struct{ chunks [][]byte }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, fmt.Errorf("test: no more data")
	}
	n := copy(p, r.chunks[0])
	if r.chunks[0] = r.chunks[0][n:]; len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

// encodePackets returns the wire bytes of each payload under the null
// cipher.
func encodePackets(t *testing.T, payloads ...[]byte) [][]byte {
	var out [][]byte
	for _, p := range payloads {
		var b bytes.Buffer
		if err := newPacketWriter(&b, [32]byte{}).write(p); err != nil {
			t.Fatal(err)
		}
		out = append(out, b.Bytes())
	}
	return out
}

// TestOnReadWait checks that the wait hook runs before every read that
// needs the network and never between packets that arrived together, and
// that the read buffer grows for bulk packets without losing a byte.
func TestOnReadWait(t *testing.T) {
	big := bytes.Repeat([]byte{'b'}, 20000)
	small := []byte("s")
	w := encodePackets(t, big, small, big, small)
	// Packets 0 and 1 arrive together; 2 and 3 together, later.
	src := &chunkReader{chunks: [][]byte{append(w[0], w[1]...), append(w[2], w[3]...)}}
	r := newPacketReader(src)
	var events []string
	r.onWait = func() { events = append(events, "wait") }
	for range 4 {
		p, err := r.read()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, fmt.Sprint(len(p)))
	}
	if got, want := strings.Join(events, " "), "wait 20000 1 wait 20000 1"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if r.r.Size() != readAhead {
		t.Errorf("read buffer %d bytes after bulk packets, want %d", r.r.Size(), readAhead)
	}
}

// TestReadAheadStaysSmall checks that a connection without bulk packets
// keeps its small read buffer.
func TestReadAheadStaysSmall(t *testing.T) {
	w := encodePackets(t, []byte("a"), []byte("b"))
	r := newPacketReader(&chunkReader{chunks: w})
	for range 2 {
		if _, err := r.read(); err != nil {
			t.Fatal(err)
		}
	}
	if r.r.Size() != startRead {
		t.Errorf("read buffer %d bytes, want %d", r.r.Size(), startRead)
	}
}
