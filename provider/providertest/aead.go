package providertest

import (
	"bytes"
	"crypto/cipher"
	"fmt"
	"testing"

	"github.com/offload/offload/provider"
)

// aeadLengths are the plaintext lengths of the round trips: every length
// up to 300 bytes and a few large ones around SSH packet sizes.
func aeadLengths() []int {
	var ls []int
	for n := 0; n <= 300; n++ {
		ls = append(ls, n)
	}
	return append(ls, 1024, 8191, 16384, 32768+13, 65536+7)
}

// tamperLengths are the plaintext lengths the tamper checks use.
var tamperLengths = []int{0, 1, 15, 16, 17, 64, 255}

// TestAEAD tests the AEAD p builds for alg: sizes, key checks, known
// answers, agreement with the reference, round trips, tamper detection and
// the cipher.AEAD rules for dst, overlap and nonce length.
func TestAEAD(t *testing.T, p provider.AEADProvider, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilyAEAD)
	g := newRNG(t)
	key := g.bytes(alg.KeySize)
	a := newAEAD(t, p, alg, key)
	defer release(t, a)
	at := &aeadTest{p: p, alg: alg, key: key, a: a, ref: refAEAD(alg, key), g: g}
	t.Run("Sizes", at.sizes)
	t.Run("BadKeys", at.badKeys)
	t.Run("KnownAnswers", at.knownAnswers)
	t.Run("RoundTrip", at.roundTrip)
	t.Run("Tamper", at.tamper)
	t.Run("WrongNonceSize", at.wrongNonceSize)
	t.Run("AppendDst", at.appendDst)
	t.Run("InPlace", at.inPlace)
	t.Run("InexactOverlap", at.inexactOverlap)
	t.Run("OpenFailureHidesPlaintext", at.failureHidesPlaintext)
	t.Run("InputsUnchanged", at.inputsUnchanged)
}

type aeadTest struct {
	p   provider.AEADProvider
	alg *provider.Algorithm
	key []byte
	a   cipher.AEAD
	ref cipher.AEAD // nil without a reference
	g   *rng
}

func newAEAD(t *testing.T, p provider.AEADProvider, alg *provider.Algorithm, key []byte) cipher.AEAD {
	t.Helper()
	var a cipher.AEAD
	var err error
	if !noPanic(t, "NewAEAD", func() { a, err = p.NewAEAD(alg, key) }) {
		t.FailNow()
	}
	if err != nil || a == nil {
		t.Fatalf("NewAEAD(%s, %d-byte key) = %v, %v", alg.Name, len(key), a, err)
	}
	return a
}

// msg returns a nonce, plaintext and additional data for length n.
func (at *aeadTest) msg(n int) (nonce, pt, ad []byte) {
	return at.g.bytes(at.alg.NonceSize), at.g.bytes(n), at.g.bytes(n * 7 % 41)
}

func (at *aeadTest) sizes(t *testing.T) {
	if got := at.a.NonceSize(); got != at.alg.NonceSize {
		t.Errorf("NonceSize() = %d, catalog says %d", got, at.alg.NonceSize)
	}
	if got := at.a.Overhead(); got != at.alg.TagSize {
		t.Errorf("Overhead() = %d, catalog says %d", got, at.alg.TagSize)
	}
}

func (at *aeadTest) badKeys(t *testing.T) {
	for _, n := range badKeySizes(at.alg.KeySize) {
		var a cipher.AEAD
		var err error
		what := fmt.Sprintf("NewAEAD(%s, %d-byte key)", at.alg.Name, n)
		if noPanic(t, what, func() { a, err = at.p.NewAEAD(at.alg, at.g.bytes(n)) }) {
			wantKeySizeError(t, what, err)
			release(t, a)
		}
	}
	other := otherFamily(provider.FamilyAEAD)
	var a cipher.AEAD
	var err error
	what := fmt.Sprintf("NewAEAD(%s)", other.Name)
	if noPanic(t, what, func() { a, err = at.p.NewAEAD(other, at.key) }) && err == nil {
		t.Errorf("%s: accepted an algorithm of family %s", what, other.Family)
		release(t, a)
	}
}

// badKeySizes lists key lengths that must be refused for a size-byte key,
// including the sizes of the algorithm's siblings (a 32-byte key is valid
// AES but not for aes128-gcm).
func badKeySizes(size int) []int {
	out := []int{0, 1, size - 1, size + 1, 2 * size}
	for _, s := range []int{16, 24, 32, 64} {
		if s != size {
			out = append(out, s)
		}
	}
	return out
}

func (at *aeadTest) knownAnswers(t *testing.T) {
	vs := aeadVectors[at.alg.Name]
	if len(vs) == 0 {
		t.Skipf("no known-answer vectors for %s", at.alg.Name)
	}
	for _, v := range vs {
		at.knownAnswer(t, v)
	}
}

func (at *aeadTest) knownAnswer(t *testing.T, v aeadVector) {
	a := newAEAD(t, at.p, at.alg, unhex(v.key))
	defer release(t, a)
	nonce, pt, ad, want := unhex(v.nonce), unhex(v.plain), unhex(v.ad), unhex(v.sealed)
	if got := a.Seal(nil, nonce, pt, ad); !bytes.Equal(got, want) {
		t.Errorf("%s: Seal = %s, want %s", v.source, short(got), short(want))
	}
	got, err := a.Open(nil, nonce, want, ad)
	if err != nil || !bytes.Equal(got, pt) {
		t.Errorf("%s: Open = %s, %v; want %s", v.source, short(got), err, short(pt))
	}
}

// roundTrip seals and opens every length, comparing with the reference.
func (at *aeadTest) roundTrip(t *testing.T) {
	if at.ref == nil {
		t.Logf("no reference AEAD for %s: round trips only", at.alg.Name)
	}
	for _, n := range aeadLengths() {
		nonce, pt, ad := at.msg(n)
		ct := at.a.Seal(nil, nonce, pt, ad)
		if len(ct) != n+at.alg.TagSize {
			t.Fatalf("len %d: Seal returned %d bytes, want %d", n, len(ct), n+at.alg.TagSize)
		}
		if again := at.a.Seal(nil, nonce, pt, ad); !bytes.Equal(again, ct) {
			t.Fatalf("len %d: Seal is not deterministic for fixed key, nonce and input", n)
		}
		if at.ref != nil {
			if want := at.ref.Seal(nil, nonce, pt, ad); !bytes.Equal(ct, want) {
				t.Fatalf("len %d, ad %d: Seal = %s, reference gives %s", n, len(ad), short(ct), short(want))
			}
		}
		got, err := at.a.Open(nil, nonce, ct, ad)
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("len %d: Open(Seal(p)) = %s, %v; want %s", n, short(got), err, short(pt))
		}
	}
}

// tamper changes each part of a sealed message in turn; Open must refuse
// every change without panicking.
func (at *aeadTest) tamper(t *testing.T) {
	other := newAEAD(t, at.p, at.alg, flip(at.key, 0, 0))
	defer release(t, other)
	for _, n := range tamperLengths {
		nonce, pt, ad := at.msg(n)
		if len(ad) == 0 {
			ad = at.g.bytes(13)
		}
		ct := at.a.Seal(nil, nonce, pt, ad)
		refuse := func(what string, a cipher.AEAD, nonce, ct, ad []byte) {
			t.Helper()
			var err error
			what = fmt.Sprintf("len %d: Open with %s", n, what)
			if noPanic(t, what, func() { _, err = a.Open(nil, nonce, ct, ad) }) && err == nil {
				t.Errorf("%s: accepted", what)
			}
		}
		for i := range ct {
			part := "ciphertext"
			if i >= n {
				part = "tag"
			}
			refuse(fmt.Sprintf("%s byte %d changed", part, i), at.a, nonce, flip(ct, i, i), ad)
		}
		for i := range nonce {
			refuse(fmt.Sprintf("nonce byte %d changed", i), at.a, flip(nonce, i, i+3), ct, ad)
		}
		for i := range ad {
			refuse(fmt.Sprintf("additional data byte %d changed", i), at.a, nonce, ct, flip(ad, i, i+5))
		}
		refuse("additional data extended", at.a, nonce, ct, append(clone(ad), 0))
		refuse("additional data truncated", at.a, nonce, ct, ad[:len(ad)-1])
		refuse("additional data dropped", at.a, nonce, ct, nil)
		refuse("ciphertext truncated by one byte", at.a, nonce, ct[:len(ct)-1], ad)
		refuse("ciphertext extended by one byte", at.a, nonce, append(clone(ct), 0), ad)
		refuse("ciphertext shorter than the tag", at.a, nonce, ct[:at.alg.TagSize-1], ad)
		refuse("empty ciphertext", at.a, nonce, nil, ad)
		refuse("another key", other, nonce, ct, ad)
	}
}

// wrongNonceSize: Seal cannot report an error, so it must panic; Open may
// panic or fail, but never succeed.
func (at *aeadTest) wrongNonceSize(t *testing.T) {
	ns := at.alg.NonceSize
	_, pt, ad := at.msg(32)
	good := at.g.bytes(ns)
	ct := at.a.Seal(nil, good, pt, ad)
	for _, n := range []int{0, ns - 1, ns + 1, 2 * ns} {
		nonce := append(clone(good), make([]byte, max(0, n-ns))...)[:n]
		mustPanic(t, fmt.Sprintf("Seal with a %d-byte nonce", n), func() { at.a.Seal(nil, nonce, pt, ad) })
		var err error
		if v := panicValue(func() { _, err = at.a.Open(nil, nonce, ct, ad) }); v == nil && err == nil {
			t.Errorf("Open with a %d-byte nonce: accepted", n)
		}
	}
}

// appendDst checks that Seal and Open append to dst, never touching its
// bytes or the spare capacity past the result, with and without room.
func (at *aeadTest) appendDst(t *testing.T) {
	for _, n := range []int{0, 1, 16, 100, 1000} {
		nonce, pt, ad := at.msg(n)
		ct := at.a.Seal(nil, nonce, pt, ad)
		for _, plen := range []int{1, 5, 512} {
			for _, spare := range []int{0, len(ct) + 64} {
				what := fmt.Sprintf("len %d, %d-byte dst, %d spare", n, plen, spare)
				at.checkAppend(t, "Seal "+what, ct, plen, spare, func(dst []byte) ([]byte, error) {
					return at.a.Seal(dst, nonce, pt, ad), nil
				})
				at.checkAppend(t, "Open "+what, pt, plen, spare, func(dst []byte) ([]byte, error) {
					return at.a.Open(dst, nonce, ct, ad)
				})
			}
		}
	}
}

// checkAppend calls op with a random plen-byte dst that has spare bytes of
// random capacity, and checks the result is dst followed by want.
func (at *aeadTest) checkAppend(t *testing.T, what string, want []byte, plen, spare int, op func([]byte) ([]byte, error)) {
	t.Helper()
	backing := at.g.bytes(plen + spare)
	saved := clone(backing)
	dst := backing[:plen:len(backing)]
	out, err := op(dst)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if len(out) != plen+len(want) || !bytes.Equal(out[:plen], saved[:plen]) || !bytes.Equal(out[plen:], want) {
		t.Errorf("%s: got %s, want dst %s followed by %s", what, short(out), short(saved[:plen]), short(want))
		return
	}
	if end := len(out); end < len(backing) && !bytes.Equal(backing[end:], saved[end:]) {
		t.Errorf("%s: wrote past the end of its result into dst's spare capacity", what)
	}
	if !bytes.Equal(backing[:plen], saved[:plen]) {
		t.Errorf("%s: modified the bytes of dst", what)
	}
}

// inPlace checks exact overlap: Seal(p[:0], n, p, ad), Open(c[:0], n, c, ad)
// and the SSH layout where dst is a prefix of the same buffer.
func (at *aeadTest) inPlace(t *testing.T) {
	tag := at.alg.TagSize
	for _, n := range []int{0, 1, 16, 17, 300, 4096} {
		nonce, pt, ad := at.msg(n)
		want := at.a.Seal(nil, nonce, pt, ad)

		buf := make([]byte, n, n+tag)
		copy(buf, pt)
		if got := at.a.Seal(buf[:0], nonce, buf, ad); !bytes.Equal(got, want) {
			t.Errorf("len %d: in-place Seal = %s, want %s", n, short(got), short(want))
		}
		buf = clone(want)
		if got, err := at.a.Open(buf[:0], nonce, buf, ad); err != nil || !bytes.Equal(got, pt) {
			t.Errorf("len %d: in-place Open = %s, %v; want %s", n, short(got), err, short(pt))
		}

		// Packet layout: a 4-byte header that stays, as additional data,
		// followed by the payload sealed in place.
		pkt := make([]byte, 4+n, 4+n+tag)
		at.g.fill(pkt[:4])
		copy(pkt[4:], pt)
		hdr := clone(pkt[:4])
		wantPkt := append(clone(hdr), at.a.Seal(nil, nonce, pt, hdr)...)
		if got := at.a.Seal(pkt[:4], nonce, pkt[4:], pkt[:4]); !bytes.Equal(got, wantPkt) {
			t.Errorf("len %d: Seal(p[:4], n, p[4:], p[:4]) = %s, want %s", n, short(got), short(wantPkt))
		}
	}
}

// inexactOverlap checks that dst overlapping the input anywhere but at its
// start panics, as crypto/cipher requires.
func (at *aeadTest) inexactOverlap(t *testing.T) {
	for _, n := range []int{2, 16, 64, 1000} {
		nonce, pt, ad := at.msg(n)
		ct := at.a.Seal(nil, nonce, pt, ad)
		buf := make([]byte, n+len(ct))
		for _, off := range []int{1, n - 1} {
			copy(buf, pt)
			mustPanic(t, fmt.Sprintf("len %d: Seal with dst = plaintext[%d:%d]", n, off, off),
				func() { at.a.Seal(buf[off:off], nonce, buf[:n], ad) })
		}
		for _, off := range []int{1, n - 1} {
			copy(buf, ct)
			mustPanic(t, fmt.Sprintf("len %d: Open with dst = ciphertext[%d:%d]", n, off, off),
				func() { _, _ = at.a.Open(buf[off:off], nonce, buf[:len(ct)], ad) })
		}
	}
}

// failureHidesPlaintext checks that a failed Open leaves no plaintext in
// dst's memory, neither in a separate buffer nor in place.
func (at *aeadTest) failureHidesPlaintext(t *testing.T) {
	for _, n := range []int{16, 64, 1000} {
		nonce, pt, ad := at.msg(n)
		ct := at.a.Seal(nil, nonce, pt, ad)
		bad := flip(ct, len(ct)-1, 0)

		mem := at.g.bytes(n + at.alg.TagSize)
		out, err := at.a.Open(mem[:0], nonce, bad, ad)
		if err == nil {
			t.Fatalf("len %d: Open accepted a changed tag", n)
		}
		if len(out) != 0 {
			t.Errorf("len %d: failed Open returned %d bytes, want none", n, len(out))
		}
		if leaksPlaintext(mem, pt) {
			t.Errorf("len %d: failed Open left plaintext in dst", n)
		}
		inplace := clone(bad)
		if _, err := at.a.Open(inplace[:0], nonce, inplace, ad); err == nil {
			t.Fatalf("len %d: in-place Open accepted a changed tag", n)
		}
		if leaksPlaintext(inplace, pt) {
			t.Errorf("len %d: failed in-place Open left plaintext in the buffer", n)
		}
	}
}

// inputsUnchanged checks Seal and Open never write to their inputs.
func (at *aeadTest) inputsUnchanged(t *testing.T) {
	for _, n := range []int{0, 16, 1000} {
		nonce, pt, ad := at.msg(n)
		saved := [][]byte{clone(nonce), clone(pt), clone(ad)}
		ct := at.a.Seal(nil, nonce, pt, ad)
		ctSaved := clone(ct)
		_, _ = at.a.Open(nil, nonce, ct, ad)
		bad := flip(ct, 0, 0)
		badSaved := clone(bad)
		_, _ = at.a.Open(nil, nonce, bad, ad)
		for i, name := range []string{"nonce", "plaintext", "additional data"} {
			if now := [][]byte{nonce, pt, ad}[i]; !bytes.Equal(now, saved[i]) {
				t.Errorf("len %d: Seal or Open modified the %s", n, name)
			}
		}
		if !bytes.Equal(ct, ctSaved) || !bytes.Equal(bad, badSaved) {
			t.Errorf("len %d: Open modified its ciphertext input", n)
		}
	}
}
