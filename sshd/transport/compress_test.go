package transport

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	kzlib "github.com/klauspost/compress/zlib"

	"github.com/offload/offload/sshd/wire"
)

func testPayloads() [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 40<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte("offload compresses channel data like OpenSSH's zlib@openssh.com. "), 600)
	return [][]byte{{94, 0, 0, 0, 1}, text, random, make([]byte, 32<<10), text[:1000], random[:3], []byte{2}}
}

// Each packet compressed by the deflater comes back whole from the
// inflater, the stream carried from packet to packet.
func TestCompressRoundTrip(t *testing.T) {
	d, f := newDeflater(), newInflater(MaxPacket)
	for round := 0; round < 3; round++ {
		for i, p := range testPayloads() {
			c, err := d.compress(p)
			if err != nil {
				t.Fatal(err)
			}
			c = bytes.Clone(c)
			got, err := f.inflate(c)
			if err != nil {
				t.Fatalf("round %d packet %d: %v", round, i, err)
			}
			if !bytes.Equal(got, p) {
				t.Fatalf("round %d packet %d: %d bytes back, want %d", round, i, len(got), len(p))
			}
		}
	}
	if !d.used || !f.used {
		t.Error("streams not marked used")
	}
}

// The inflater stops at any byte of the stream and goes on with the
// next: a stream cut into pieces anywhere decodes to the same bytes, as a
// peer's partial flushes need (they end packets inside a block).
func TestInflateResumesAnywhere(t *testing.T) {
	var all, stream bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&stream, 6)
	for _, p := range testPayloads() {
		all.Write(p)
		zw.Write(p)
	}
	zw.Flush()
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 20; trial++ {
		f := newInflater(MaxPacket)
		var got []byte
		rest := stream.Bytes()
		for len(rest) > 0 {
			n := min(len(rest), 1+rng.IntN(1+trial*trial*50))
			out, err := f.inflate(rest[:n])
			if err != nil {
				t.Fatalf("trial %d: %v", trial, err)
			}
			got = append(got, out...)
			rest = rest[n:]
		}
		if !bytes.Equal(got, all.Bytes()) {
			t.Fatalf("trial %d: %d bytes, want %d", trial, len(got), all.Len())
		}
	}
}

// A packet that expands beyond the limit is refused with
// SSH_DISCONNECT_COMPRESSION_ERROR before the memory is spent.
func TestInflateBomb(t *testing.T) {
	var stream bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&stream, 9)
	zw.Write(make([]byte, 64<<20))
	zw.Flush()
	t.Logf("64 MiB of zeros compress to %d bytes", stream.Len())
	f := newInflater(MaxPacket)
	_, err := f.inflate(stream.Bytes())
	var de *DisconnectError
	if !errors.As(err, &de) || de.Reason != wire.DisconnectCompressionError {
		t.Fatalf("err = %v, want a compression error", err)
	}
	if cap(f.win) > 2*MaxPacket {
		t.Errorf("window grew to %d bytes for a %d-byte limit", cap(f.win), MaxPacket)
	}
}

// Malformed streams are errors, never panics.
func TestInflateMalformed(t *testing.T) {
	for _, in := range [][]byte{
		{0x78, 0x9d},                   // bad header check
		{0x79, 0x9c},                   // not deflate
		{0x78, 0xbb},                   // preset dictionary
		{0x78, 0x9c, 0x07},             // reserved block type
		{0x78, 0x9c, 0x00, 1, 0, 1, 0}, // stored length check
		{0x78, 0x9c, 0x03, 0x00, 0x01}, // fixed block, then a final block ends; data after it
	} {
		f := newInflater(MaxPacket)
		if _, err := f.inflate(in); err == nil {
			t.Errorf("%x: no error", in)
		}
	}
}

// FuzzInflate feeds arbitrary streams, cut into packets, to the
// inflater: errors are fine, panics and output beyond the limit are not.
func FuzzInflate(f *testing.F) {
	var stream bytes.Buffer
	zw := zlib.NewWriter(&stream)
	for _, p := range testPayloads()[:2] {
		zw.Write(p)
		zw.Flush()
	}
	f.Add(stream.Bytes(), uint16(100))
	f.Add([]byte{0x78, 0x9c, 0x03, 0x00}, uint16(1))
	f.Add([]byte{0x78, 0x9c, 0x05, 0xc0, 0x81, 0, 0, 0, 0, 0, 0x90, 0xff, 0x6b, 0x23}, uint16(3))
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		const limit = 64 << 10
		inf := newInflater(limit)
		step := int(cut)%512 + 1
		for len(in) > 0 {
			n := min(step, len(in))
			out, err := inf.inflate(in[:n])
			if err != nil {
				return
			}
			if len(out) > limit {
				t.Fatalf("%d bytes out, limit %d", len(out), limit)
			}
			in = in[n:]
		}
	})
}

// Payloads that do not compress still fit a packet: the largest the
// connection layer sends grows by a few bytes only.
func TestDeflateIncompressible(t *testing.T) {
	d := newDeflater()
	p := testPayloads()[2]
	c, err := d.compress(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) > len(p)+64 {
		t.Errorf("%d bytes compress to %d", len(p), len(c))
	}
}

// The negotiated compression travels in a State; unknown names do not.
func TestStateCompression(t *testing.T) {
	st := &State{SessionID: []byte{1}, KexCount: 1, ClientVersion: "SSH-2.0-x", ServerVersion: "SSH-2.0-y",
		In:  DirectionState{Cipher: "chacha20-poly1305@openssh.com", Key: make([]byte, 64), Compression: compressionDelayed},
		Out: DirectionState{Cipher: "chacha20-poly1305@openssh.com", Key: make([]byte, 64), Compression: compressionNone}}
	b, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if back.In.Compression != compressionDelayed || back.Out.Compression != compressionNone {
		t.Errorf("compression %q/%q after the round trip", back.In.Compression, back.Out.Compression)
	}
	st.Out.Compression = "zlib"
	b, _ = st.MarshalBinary()
	if err := back.UnmarshalBinary(b); err == nil {
		t.Error("state with compression zlib accepted")
	}
}

// TestInflateLevels: streams of every kind of block a deflater writes —
// Huffman only, fast and best levels of compress/flate and of the
// klauspost compressor the deflater uses — over bytes of a skewed
// distribution (rare bytes get codes longer than the table's fastBits,
// decoded a bit at a time), cut anywhere, decode to the input.
func TestInflateLevels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	z := rand.NewZipf(rand.New(rand.NewPCG(7, 8)), 1.2, 1, 255)
	in := make([]byte, 300<<10)
	for i := range in {
		in[i] = byte(z.Uint64())
	}
	type flushWriter interface {
		io.Writer
		Flush() error
	}
	writers := map[string]func(io.Writer, int) (flushWriter, error){
		"compress/zlib": func(w io.Writer, l int) (flushWriter, error) { return zlib.NewWriterLevel(w, l) },
		"klauspost":     func(w io.Writer, l int) (flushWriter, error) { return kzlib.NewWriterLevel(w, l) },
	}
	for name, newW := range writers {
		for _, level := range []int{-2, 1, 6, 9} {
			var stream bytes.Buffer
			zw, err := newW(&stream, level)
			if err != nil {
				t.Fatal(err)
			}
			zw.Write(in)
			zw.Flush() // as SSH does: the stream never ends
			f := newInflater(len(in))
			var got []byte
			for rest := stream.Bytes(); len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(3000))
				out, err := f.inflate(rest[:n])
				if err != nil {
					t.Fatalf("%s level %d: %v", name, level, err)
				}
				got = append(got, out...)
				rest = rest[n:]
			}
			if !bytes.Equal(got, in) {
				t.Fatalf("%s level %d: %d bytes back, want %d", name, level, len(got), len(in))
			}
		}
	}
}

// BenchmarkInflate decodes 32 KiB packets of skewed bytes as the
// deflater compresses them, packet by packet.
func BenchmarkInflate(b *testing.B) {
	z := rand.NewZipf(rand.New(rand.NewPCG(7, 8)), 1.2, 1, 255)
	d := newDeflater()
	var pkts [][]byte
	for range 32 {
		p := make([]byte, 32<<10)
		for i := range p {
			p[i] = byte(z.Uint64())
		}
		c, err := d.compress(p)
		if err != nil {
			b.Fatal(err)
		}
		pkts = append(pkts, bytes.Clone(c))
	}
	b.SetBytes(32 * 32 << 10)
	for b.Loop() {
		f := newInflater(MaxPacket)
		for _, p := range pkts {
			if _, err := f.inflate(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}
