package providertest

import (
	"bytes"
	"crypto/cipher"
	"fmt"
	"testing"

	"github.com/offload/offload/provider"
)

// TestStream tests the cipher.Stream (AES-CTR) p builds for alg: key and IV
// checks, known answers, agreement with the reference across call
// boundaries and counter carries, and the XORKeyStream buffer rules.
func TestStream(t *testing.T, p provider.StreamProvider, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilyStream)
	st := &streamTest{p: p, alg: alg, g: newRNG(t)}
	t.Run("BadKeys", st.badKeys)
	t.Run("KnownAnswers", st.knownAnswers)
	t.Run("Reference", st.reference)
	t.Run("CounterCarry", st.counterCarry)
	t.Run("BufferRules", st.bufferRules)
}

type streamTest struct {
	p   provider.StreamProvider
	alg *provider.Algorithm
	g   *rng
}

func (st *streamTest) stream(t *testing.T, key, iv []byte) cipher.Stream {
	t.Helper()
	var s cipher.Stream
	var err error
	if !noPanic(t, "NewStream", func() { s, err = st.p.NewStream(st.alg, key, iv) }) {
		t.FailNow()
	}
	if err != nil || s == nil {
		t.Fatalf("NewStream(%s, %d-byte key, %d-byte IV) = %v, %v", st.alg.Name, len(key), len(iv), s, err)
	}
	return s
}

func (st *streamTest) badKeys(t *testing.T) {
	iv := st.g.bytes(st.alg.NonceSize)
	for _, n := range badKeySizes(st.alg.KeySize) {
		var s cipher.Stream
		var err error
		what := fmt.Sprintf("NewStream(%s, %d-byte key)", st.alg.Name, n)
		if noPanic(t, what, func() { s, err = st.p.NewStream(st.alg, st.g.bytes(n), iv) }) {
			wantKeySizeError(t, what, err)
			release(t, s)
		}
	}
	key := st.g.bytes(st.alg.KeySize)
	for _, n := range []int{0, st.alg.NonceSize - 1, st.alg.NonceSize + 1} {
		var s cipher.Stream
		var err error
		what := fmt.Sprintf("NewStream(%s, %d-byte IV)", st.alg.Name, n)
		if noPanic(t, what, func() { s, err = st.p.NewStream(st.alg, key, st.g.bytes(n)) }) && err == nil {
			t.Errorf("%s: accepted", what)
			release(t, s)
		}
	}
	other := otherFamily(provider.FamilyStream)
	var s cipher.Stream
	var err error
	if noPanic(t, "NewStream("+other.Name+")", func() { s, err = st.p.NewStream(other, key, iv) }) && err == nil {
		t.Errorf("NewStream(%s): accepted an algorithm of family %s", other.Name, other.Family)
		release(t, s)
	}
}

func (st *streamTest) knownAnswers(t *testing.T) {
	vs := streamVectors[st.alg.Name]
	if len(vs) == 0 {
		t.Skipf("no known-answer vectors for %s", st.alg.Name)
	}
	for _, v := range vs {
		pt, want := unhex(v.plain), unhex(v.cipher)
		got := make([]byte, len(pt))
		st.xor(t, unhex(v.key), unhex(v.iv), got, pt)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: got %s, want %s", v.source, short(got), short(want))
		}
	}
}

// reference XORs random messages in random-sized pieces and compares with
// one reference call: the stream must carry its position across calls.
func (st *streamTest) reference(t *testing.T) {
	for i := 0; i < 40; i++ {
		key, iv := st.g.bytes(st.alg.KeySize), st.g.bytes(st.alg.NonceSize)
		st.compare(t, key, iv, st.g.intn(2000))
	}
}

// compare checks n bytes of the stream for key and iv against the
// reference, feeding the provider's stream in random pieces.
func (st *streamTest) compare(t *testing.T, key, iv []byte, n int) {
	t.Helper()
	ref := refStream(st.alg, key, iv)
	if ref == nil {
		t.Skipf("no reference for %s", st.alg.Name)
	}
	msg := st.g.bytes(n)
	want := make([]byte, n)
	ref.XORKeyStream(want, msg)
	got := make([]byte, n)
	s := st.stream(t, key, iv)
	defer release(t, s)
	for off := 0; off < n; {
		k := min(n-off, st.g.intn(70))
		s.XORKeyStream(got[off:off+k], msg[off:off+k])
		off += k
	}
	if !bytes.Equal(got, want) {
		t.Errorf("key %x iv %x, %d bytes in pieces: got %s, reference gives %s", key, iv, n, short(got), short(want))
	}
}

// counterCarry starts near the ends of the 32-, 64- and 128-bit ranges: the
// counter block is one 128-bit big-endian integer (SP 800-38A, RFC 4344).
func (st *streamTest) counterCarry(t *testing.T) {
	key := st.g.bytes(st.alg.KeySize)
	for _, tail := range []string{"fffffffe", "fffffffffffffffe", "fffffffffffffffffffffffffffffffe"} {
		iv := st.g.bytes(st.alg.NonceSize)
		copy(iv[len(iv)-len(tail)/2:], unhex(tail))
		st.compare(t, key, iv, 200)
	}
}

func (st *streamTest) bufferRules(t *testing.T) {
	key, iv := st.g.bytes(st.alg.KeySize), st.g.bytes(st.alg.NonceSize)
	checkXORRules(t, func(dst, src []byte) { st.xor(t, key, iv, dst, src) }, st.g, 100)
}

// xor runs a fresh stream for key and iv over src once and releases it.
func (st *streamTest) xor(t *testing.T, key, iv, dst, src []byte) {
	t.Helper()
	s := st.stream(t, key, iv)
	defer release(t, s)
	s.XORKeyStream(dst, src)
}

// checkXORRules checks the crypto/cipher rules of a fresh XOR operation
// xor: in place works, dst longer than src keeps its tail, empty input is
// fine, a shorter dst or an inexact overlap panics, src is not modified.
func checkXORRules(t *testing.T, xor func(dst, src []byte), g *rng, n int) {
	t.Helper()
	src := g.bytes(n)
	saved := clone(src)
	want := make([]byte, n)
	xor(want, src)
	if !bytes.Equal(src, saved) {
		t.Errorf("XOR modified src")
	}
	buf := clone(src)
	if xor(buf, buf); !bytes.Equal(buf, want) {
		t.Errorf("in-place XOR = %s, want %s", short(buf), short(want))
	}
	long := g.bytes(n + 20)
	tail := clone(long[n:])
	xor(long, src)
	if !bytes.Equal(long[:n], want) || !bytes.Equal(long[n:], tail) {
		t.Errorf("XOR into a longer dst: wrote %s, want %s then untouched %s", short(long), short(want), short(tail))
	}
	noPanic(t, "XOR of empty slices", func() { xor(nil, nil) })
	mustPanic(t, "XOR into a dst shorter than src", func() { xor(make([]byte, n-1), src) })
	shared := make([]byte, 2*n)
	mustPanic(t, "XOR with dst = src shifted by one byte", func() { xor(shared[1:n+1], shared[:n]) })
	mustPanic(t, "XOR with dst overlapping the end of src", func() { xor(shared[n-1:2*n-1], shared[:n]) })
}

// TestKeyStream tests the KeyStream (ChaCha20) p builds for alg: the nonce
// and counter are explicit on every call and nothing carries between calls.
func TestKeyStream(t *testing.T, p provider.KeyStreamProvider, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilyKeyStream)
	g := newRNG(t)
	key := g.bytes(alg.KeySize)
	ks := newKeyStream(t, p, alg, key)
	defer release(t, ks)
	kt := &keyStreamTest{p: p, alg: alg, key: key, ks: ks, g: g}
	t.Run("BadKeys", kt.badKeys)
	t.Run("KnownAnswers", kt.knownAnswers)
	t.Run("Reference", kt.reference)
	t.Run("Counter", kt.counter)
	t.Run("Stateless", kt.stateless)
	t.Run("WrongNonceSize", kt.wrongNonceSize)
	t.Run("BufferRules", kt.bufferRules)
}

type keyStreamTest struct {
	p   provider.KeyStreamProvider
	alg *provider.Algorithm
	key []byte
	ks  provider.KeyStream
	g   *rng
}

func newKeyStream(t *testing.T, p provider.KeyStreamProvider, alg *provider.Algorithm, key []byte) provider.KeyStream {
	t.Helper()
	var ks provider.KeyStream
	var err error
	if !noPanic(t, "NewKeyStream", func() { ks, err = p.NewKeyStream(alg, key) }) {
		t.FailNow()
	}
	if err != nil || ks == nil {
		t.Fatalf("NewKeyStream(%s, %d-byte key) = %v, %v", alg.Name, len(key), ks, err)
	}
	return ks
}

func (kt *keyStreamTest) badKeys(t *testing.T) {
	for _, n := range badKeySizes(kt.alg.KeySize) {
		var ks provider.KeyStream
		var err error
		what := fmt.Sprintf("NewKeyStream(%s, %d-byte key)", kt.alg.Name, n)
		if noPanic(t, what, func() { ks, err = kt.p.NewKeyStream(kt.alg, kt.g.bytes(n)) }) {
			wantKeySizeError(t, what, err)
			release(t, ks)
		}
	}
	other := otherFamily(provider.FamilyKeyStream)
	var ks provider.KeyStream
	var err error
	if noPanic(t, "NewKeyStream("+other.Name+")", func() { ks, err = kt.p.NewKeyStream(other, kt.key) }) && err == nil {
		t.Errorf("NewKeyStream(%s): accepted an algorithm of family %s", other.Name, other.Family)
		release(t, ks)
	}
}

func (kt *keyStreamTest) knownAnswers(t *testing.T) {
	vs := keyStreamVectors[kt.alg.Name]
	if len(vs) == 0 {
		t.Skipf("no known-answer vectors for %s", kt.alg.Name)
	}
	for _, v := range vs {
		ks := newKeyStream(t, kt.p, kt.alg, unhex(v.key))
		pt, want := unhex(v.plain), unhex(v.cipher)
		got := make([]byte, len(pt))
		ks.XORKeyStreamAt(got, pt, unhex(v.nonce), v.counter)
		release(t, ks)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: got %s, want %s", v.source, short(got), short(want))
		}
	}
}

// packetSizes are lengths around block and packet boundaries, where a
// keystream that splits its input (SIMD width, a portable tail) can slip.
var packetSizes = []int{1, 63, 64, 65, 255, 256, 257, 271, 272, 273, 319, 320, 335, 336, 1024, 1500, 16383, 32768 + 13, 65536, 256 << 10}

func (kt *keyStreamTest) reference(t *testing.T) {
	for i := 0; i < 60; i++ {
		counter := []uint32{0, 1, 2, uint32(kt.g.intn(1 << 20))}[i%4]
		kt.compare(t, counter, kt.g.intn(700), i%2 == 0)
	}
	for i, n := range packetSizes {
		kt.compare(t, 1, n, i%2 == 0)
	}
}

// compare checks n bytes at counter against the reference, in place or
// into a separate buffer.
func (kt *keyStreamTest) compare(t *testing.T, counter uint32, n int, inPlace bool) {
	t.Helper()
	nonce, src := kt.g.bytes(kt.alg.NonceSize), kt.g.bytes(n)
	want := make([]byte, n)
	if !refKeyStream(kt.alg, kt.key, nonce, counter, want, src) {
		t.Skipf("no reference for %s", kt.alg.Name)
	}
	got := make([]byte, n)
	if inPlace {
		copy(got, src)
		src = got
	}
	kt.ks.XORKeyStreamAt(got, src, nonce, counter)
	if !bytes.Equal(got, want) {
		t.Fatalf("nonce %x counter %d, %d bytes (in place %v): got %s, reference gives %s", nonce, counter, n, inPlace, short(got), short(want))
	}
}

// counter checks that the counter counts blocks: the stream at counter c
// continues, block for block, into the stream at c+1.
func (kt *keyStreamTest) counter(t *testing.T) {
	bs := kt.alg.BlockSize
	nonce := kt.g.bytes(kt.alg.NonceSize)
	for _, c := range []uint32{0, 1, 41, 1 << 31} {
		whole := make([]byte, 3*bs)
		kt.ks.XORKeyStreamAt(whole, whole, nonce, c)
		for b := 0; b < 3; b++ {
			part := make([]byte, bs)
			kt.ks.XORKeyStreamAt(part, part, nonce, c+uint32(b))
			if !bytes.Equal(part, whole[b*bs:(b+1)*bs]) {
				t.Errorf("counter %d: block %d of one call differs from a call at counter %d", c, b, c+uint32(b))
			}
		}
	}
	a, b := make([]byte, bs), make([]byte, bs)
	kt.ks.XORKeyStreamAt(a, a, nonce, 0)
	kt.ks.XORKeyStreamAt(b, b, nonce, 1)
	if bytes.Equal(a, b) {
		t.Errorf("counters 0 and 1 give the same keystream")
	}
}

// stateless interleaves calls with different nonces: each result must
// depend only on its own arguments.
func (kt *keyStreamTest) stateless(t *testing.T) {
	n1, n2 := kt.g.bytes(kt.alg.NonceSize), kt.g.bytes(kt.alg.NonceSize)
	first := make([]byte, 150)
	kt.ks.XORKeyStreamAt(first, first, n1, 7)
	other := make([]byte, 90)
	kt.ks.XORKeyStreamAt(other, other, n2, 3)
	again := make([]byte, 150)
	kt.ks.XORKeyStreamAt(again, again, n1, 7)
	if !bytes.Equal(first, again) {
		t.Errorf("the same nonce and counter gave different keystreams after another call")
	}
	if bytes.Equal(first[:90], other) {
		t.Errorf("different nonces gave the same keystream")
	}
}

func (kt *keyStreamTest) wrongNonceSize(t *testing.T) {
	ns := kt.alg.NonceSize
	for _, n := range []int{0, 8, ns - 1, ns + 1, 24} {
		if n == ns {
			continue
		}
		buf := make([]byte, 64)
		mustPanic(t, fmt.Sprintf("XORKeyStreamAt with a %d-byte nonce", n),
			func() { kt.ks.XORKeyStreamAt(buf, buf, make([]byte, n), 0) })
	}
}

func (kt *keyStreamTest) bufferRules(t *testing.T) {
	nonce := kt.g.bytes(kt.alg.NonceSize)
	checkXORRules(t, func(dst, src []byte) { kt.ks.XORKeyStreamAt(dst, src, nonce, 5) }, kt.g, 100)
	// Counter 1 on a long input is the SSH packet path, where an
	// implementation may take a faster road than for short ones.
	checkXORRules(t, func(dst, src []byte) { kt.ks.XORKeyStreamAt(dst, src, nonce, 1) }, kt.g, 1000)
}
