package transport

import (
	"bytes"
	"crypto/rand"
	"io"
	"testing"
)

// cipherPair returns matching write and read ciphers for cs/ms with random
// keys.
func cipherPair(t testing.TB, cs *cipherSpec, ms *macSpec) (packetCipher, packetCipher) {
	t.Helper()
	k := directionKeys{iv: randBytes(cs.ivSize), key: randBytes(cs.keySize)}
	if ms != nil {
		k.macKey = randBytes(ms.keySize)
	}
	reg := testRegistry(t)
	w, err := newPacketCipher(reg, cs, ms, k)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newPacketCipher(reg, cs, ms, k)
	if err != nil {
		t.Fatal(err)
	}
	return w, r
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// loopback is a writer and reader joined by a buffer.
type loopback struct {
	buf bytes.Buffer
	w   *packetWriter
	r   *packetReader
}

func newLoopback(t testing.TB, cs *cipherSpec, ms *macSpec) *loopback {
	l := &loopback{}
	l.w = newPacketWriter(&l.buf, [32]byte{1})
	l.r = newPacketReader(&l.buf)
	if cs != nil {
		l.w.c, l.r.c = cipherPair(t, cs, ms)
	}
	return l
}

func benchCiphers() []struct {
	name string
	cs   *cipherSpec
	ms   *macSpec
} {
	var out []struct {
		name string
		cs   *cipherSpec
		ms   *macSpec
	}
	for _, cm := range cipherMACCombos() {
		out = append(out, struct {
			name string
			cs   *cipherSpec
			ms   *macSpec
		}{cm[0] + "+" + cm[1], findCipher(cm[0]), findMAC(cm[1])})
	}
	return out
}

// BenchmarkPacketWrite measures sealing and writing one 32 KiB channel
// data packet; it must report 0 allocs/op.
func BenchmarkPacketWrite(b *testing.B) {
	for _, bc := range benchCiphers() {
		b.Run(bc.name, func(b *testing.B) {
			l := newLoopback(b, bc.cs, bc.ms)
			l.w.w = io.Discard
			payload := make([]byte, 32<<10)
			payload[0] = 94
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				if err := l.w.write(payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPacketRoundTrip measures writing and reading back one 32 KiB
// packet; it must report 0 allocs/op.
func BenchmarkPacketRoundTrip(b *testing.B) {
	for _, bc := range benchCiphers() {
		b.Run(bc.name, func(b *testing.B) {
			l := newLoopback(b, bc.cs, bc.ms)
			payload := make([]byte, 32<<10)
			payload[0] = 94
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				if err := l.w.write(payload); err != nil {
					b.Fatal(err)
				}
				if _, err := l.r.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPacketPathAllocs enforces zero allocations per packet.
func TestPacketPathAllocs(t *testing.T) {
	for _, bc := range benchCiphers() {
		l := newLoopback(t, bc.cs, bc.ms)
		payload := make([]byte, 1<<10)
		payload[0] = 94
		allocs := testing.AllocsPerRun(100, func() {
			if err := l.w.write(payload); err != nil {
				t.Fatal(err)
			}
			if _, err := l.r.read(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per packet, want 0", bc.name, allocs)
		}
	}
}
