package providertest

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"testing"

	"github.com/offload/offload/provider"
)

// TestMAC tests the keyed hash (HMAC) p builds for alg: known answers,
// agreement with crypto/hmac, and the hash.Hash contract.
func TestMAC(t *testing.T, p provider.MACProvider, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilyMAC)
	g := newRNG(t)
	key := g.bytes(alg.KeySize)
	newMAC := func(t *testing.T, key []byte) hash.Hash {
		t.Helper()
		h, err := callNewMAC(p, alg, key)
		if err != nil || h == nil {
			t.Fatalf("NewMAC(%s, %d-byte key) = %v, %v", alg.Name, len(key), h, err)
		}
		return h
	}
	t.Run("KnownAnswers", func(t *testing.T) { macKnownAnswers(t, p, alg) })
	t.Run("Reference", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			k := g.bytes(alg.KeySize)
			ref := refMAC(alg, k)
			if ref == nil {
				t.Skipf("no reference for %s", alg.Name)
			}
			h := newMAC(t, k)
			compareHash(t, h, ref, g)
			release(t, h)
		}
	})
	t.Run("KeyMatters", func(t *testing.T) {
		a, b := newMAC(t, key), newMAC(t, flip(key, len(key)-1, 7))
		defer release(t, a)
		defer release(t, b)
		if bytes.Equal(a.Sum(nil), b.Sum(nil)) {
			t.Errorf("keys differing in one bit give the same MAC")
		}
	})
	t.Run("Contract", func(t *testing.T) {
		checkHashContract(t, func() hash.Hash { return newMAC(t, key) }, alg, g)
	})
	t.Run("BadAlgorithm", func(t *testing.T) {
		other := otherFamily(provider.FamilyMAC)
		if h, err := callNewMAC(p, other, key); err == nil {
			t.Errorf("NewMAC(%s): accepted an algorithm of family %s", other.Name, other.Family)
			release(t, h)
		}
	})
}

// callNewMAC calls NewMAC and turns a panic into an error.
func callNewMAC(p provider.MACProvider, alg *provider.Algorithm, key []byte) (h hash.Hash, err error) {
	if v := panicValue(func() { h, err = p.NewMAC(alg, key) }); v != nil {
		return nil, fmt.Errorf("NewMAC panicked: %v", v)
	}
	return h, err
}

// macKnownAnswers runs the RFC 4231 vectors. HMAC takes keys of any length
// but a provider may hold to the catalog's key size; a vector whose key it
// refuses with a *provider.KeySizeError is noted and skipped (the reference
// comparison covers catalog-sized keys).
func macKnownAnswers(t *testing.T, p provider.MACProvider, alg *provider.Algorithm) {
	vs := macVectors[alg.Name]
	if len(vs) == 0 {
		t.Skipf("no known-answer vectors for %s", alg.Name)
	}
	ran := 0
	for _, v := range vs {
		key := unhex(v.key)
		h, err := callNewMAC(p, alg, key)
		var kse *provider.KeySizeError
		if errors.As(err, &kse) && len(key) != alg.KeySize {
			t.Logf("%s: %d-byte key refused (%v); skipped", v.source, len(key), err)
			continue
		}
		if err != nil {
			t.Errorf("%s: NewMAC: %v", v.source, err)
			continue
		}
		ran++
		h.Write(unhex(v.msg))
		if got, want := h.Sum(nil), unhex(v.tag); !bytes.Equal(got, want) {
			t.Errorf("%s: got %x, want %x", v.source, got, want)
		}
		release(t, h)
	}
	t.Logf("%d of %d vectors ran", ran, len(vs))
}

// TestHash tests the hash p builds for alg: known answers, agreement with
// the standard library and the hash.Hash contract.
func TestHash(t *testing.T, p provider.HashProvider, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilyHash)
	g := newRNG(t)
	newHash := func(t *testing.T) hash.Hash {
		t.Helper()
		var h hash.Hash
		var err error
		if !noPanic(t, "NewHash", func() { h, err = p.NewHash(alg) }) {
			t.FailNow()
		}
		if err != nil || h == nil {
			t.Fatalf("NewHash(%s) = %v, %v", alg.Name, h, err)
		}
		return h
	}
	t.Run("KnownAnswers", func(t *testing.T) {
		vs := hashVectors[alg.Name]
		if len(vs) == 0 {
			t.Skipf("no known-answer vectors for %s", alg.Name)
		}
		for _, v := range vs {
			h := newHash(t)
			h.Write(unhex(v.msg))
			if got, want := h.Sum(nil), unhex(v.tag); !bytes.Equal(got, want) {
				t.Errorf("%s: got %x, want %x", v.source, got, want)
			}
			release(t, h)
		}
	})
	t.Run("Reference", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			ref := refHash(alg)
			if ref == nil {
				t.Skipf("no reference for %s", alg.Name)
			}
			h := newHash(t)
			compareHash(t, h, ref, g)
			release(t, h)
		}
	})
	t.Run("Contract", func(t *testing.T) {
		checkHashContract(t, func() hash.Hash { return newHash(t) }, alg, g)
	})
	t.Run("BadAlgorithm", func(t *testing.T) {
		other := otherFamily(provider.FamilyHash)
		var h hash.Hash
		var err error
		if noPanic(t, "NewHash("+other.Name+")", func() { h, err = p.NewHash(other) }) && err == nil {
			t.Errorf("NewHash(%s): accepted an algorithm of family %s", other.Name, other.Family)
			release(t, h)
		}
	})
}

// compareHash feeds the same random message, in random pieces, to h and
// ref and compares the sums.
func compareHash(t *testing.T, h, ref hash.Hash, g *rng) {
	t.Helper()
	msg := g.bytes(g.intn(3000))
	ref.Write(msg)
	for off := 0; off < len(msg); {
		k := min(len(msg)-off, g.intn(200))
		h.Write(msg[off : off+k])
		off += k
	}
	if got, want := h.Sum(nil), ref.Sum(nil); !bytes.Equal(got, want) {
		t.Errorf("%d-byte message: got %x, reference gives %x", len(msg), got, want)
	}
}

// checkHashContract checks the documented behaviour of hash.Hash: sizes
// from the catalog, Write never fails, Sum appends without changing the
// state or its argument, Reset starts over, and writes split anywhere give
// the same sum. It holds at most two instances at a time.
func checkHashContract(t *testing.T, newHash func() hash.Hash, alg *provider.Algorithm, g *rng) {
	t.Helper()
	h := newHash()
	defer release(t, h)
	if h.Size() != alg.TagSize {
		t.Errorf("Size() = %d, catalog says %d", h.Size(), alg.TagSize)
	}
	if h.BlockSize() != alg.BlockSize {
		t.Errorf("BlockSize() = %d, catalog says %d", h.BlockSize(), alg.BlockSize)
	}
	msg := g.bytes(1000)
	if n, err := h.Write(msg); n != len(msg) || err != nil {
		t.Errorf("Write(%d bytes) = %d, %v", len(msg), n, err)
	}
	whole := h.Sum(nil)
	if len(whole) != alg.TagSize {
		t.Errorf("Sum returned %d bytes, catalog says %d", len(whole), alg.TagSize)
	}
	prefix := g.bytes(9)
	out := h.Sum(clone(prefix))
	if !bytes.Equal(out[:len(prefix)], prefix) || !bytes.Equal(out[len(prefix):], whole) {
		t.Errorf("Sum(prefix) = %x, want prefix %x followed by %x", out, prefix, whole)
	}
	if again := h.Sum(nil); !bytes.Equal(again, whole) {
		t.Errorf("a second Sum gave %x, want %x: Sum changed the state", again, whole)
	}
	h.Write(msg[:10])
	if got, want := h.Sum(nil), sumOf(t, newHash, msg, msg[:10]); !bytes.Equal(got, want) {
		t.Errorf("Write after Sum: got %x, want %x", got, want)
	}
	h.Reset()
	h.Write(msg)
	if got := h.Sum(nil); !bytes.Equal(got, whole) {
		t.Errorf("after Reset: got %x, want %x", got, whole)
	}
	split := sumOf(t, newHash, msg[:1], msg[1:64], msg[64:65], msg[65:500], msg[500:])
	if !bytes.Equal(split, whole) {
		t.Errorf("writes split at block edges: got %x, want %x", split, whole)
	}
	if e1, e2 := sumOf(t, newHash), sumOf(t, newHash); !bytes.Equal(e1, e2) {
		t.Errorf("two fresh instances disagree on the empty message")
	}
}

// sumOf writes parts to a fresh instance, releases it and returns the sum.
func sumOf(t *testing.T, newHash func() hash.Hash, parts ...[]byte) []byte {
	t.Helper()
	h := newHash()
	defer release(t, h)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// TestOneTimeMAC tests the one-time authenticator (Poly1305) p builds for
// alg: known answers, the reference, and Verify refusing every changed,
// truncated or extended tag.
func TestOneTimeMAC(t *testing.T, p provider.OneTimeMACProvider, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilyOneTimeMAC)
	g := newRNG(t)
	var m provider.OneTimeMAC
	var err error
	if !noPanic(t, "NewOneTimeMAC", func() { m, err = p.NewOneTimeMAC(alg) }) {
		t.FailNow()
	}
	if err != nil || m == nil {
		t.Fatalf("NewOneTimeMAC(%s) = %v, %v", alg.Name, m, err)
	}
	defer release(t, m)
	ot := &oneTimeTest{m: m, alg: alg, g: g}
	t.Run("KnownAnswers", ot.knownAnswers)
	t.Run("Reference", ot.reference)
	t.Run("Verify", ot.verify)
	t.Run("BadSizes", ot.badSizes)
	t.Run("BadAlgorithm", func(t *testing.T) {
		other := otherFamily(provider.FamilyOneTimeMAC)
		var m provider.OneTimeMAC
		var err error
		if noPanic(t, "NewOneTimeMAC("+other.Name+")", func() { m, err = p.NewOneTimeMAC(other) }) && err == nil {
			t.Errorf("NewOneTimeMAC(%s): accepted an algorithm of family %s", other.Name, other.Family)
			release(t, m)
		}
	})
}

type oneTimeTest struct {
	m   provider.OneTimeMAC
	alg *provider.Algorithm
	g   *rng
}

func (ot *oneTimeTest) sum(msg, key []byte) []byte {
	out := make([]byte, ot.alg.TagSize)
	ot.m.Sum(out, msg, key)
	return out
}

func (ot *oneTimeTest) knownAnswers(t *testing.T) {
	vs := macVectors[ot.alg.Name]
	if len(vs) == 0 {
		t.Skipf("no known-answer vectors for %s", ot.alg.Name)
	}
	for _, v := range vs {
		key, msg, want := unhex(v.key), unhex(v.msg), unhex(v.tag)
		if got := ot.sum(msg, key); !bytes.Equal(got, want) {
			t.Errorf("%s: Sum = %x, want %x", v.source, got, want)
		}
		if !ot.m.Verify(want, msg, key) {
			t.Errorf("%s: Verify refused the correct tag", v.source)
		}
	}
}

func (ot *oneTimeTest) reference(t *testing.T) {
	for n := 0; n <= 200; n += 1 + n/16 {
		key, msg := ot.g.bytes(ot.alg.KeySize), ot.g.bytes(n)
		want := refOneTimeMAC(ot.alg, msg, key)
		if want == nil {
			t.Skipf("no reference for %s", ot.alg.Name)
		}
		if got := ot.sum(msg, key); !bytes.Equal(got, want) {
			t.Fatalf("%d-byte message: Sum = %x, reference gives %x", n, got, want)
		}
	}
}

func (ot *oneTimeTest) verify(t *testing.T) {
	key, msg := ot.g.bytes(ot.alg.KeySize), ot.g.bytes(100)
	tag := ot.sum(msg, key)
	if !ot.m.Verify(tag, msg, key) {
		t.Fatalf("Verify refused the tag Sum made")
	}
	refuse := func(what string, tag, msg, key []byte) {
		t.Helper()
		var ok bool
		if noPanic(t, "Verify with "+what, func() { ok = ot.m.Verify(tag, msg, key) }) && ok {
			t.Errorf("Verify with %s: accepted", what)
		}
	}
	for i := range tag {
		refuse(fmt.Sprintf("tag byte %d changed", i), flip(tag, i, i), msg, key)
	}
	refuse("message changed", tag, flip(msg, 50, 1), key)
	refuse("message extended", tag, append(clone(msg), 0), key)
	refuse("another key", tag, msg, flip(key, 3, 3))
	refuse("tag truncated", tag[:len(tag)-1], msg, key)
	refuse("tag extended", append(clone(tag), 0), msg, key)
	refuse("empty tag", nil, msg, key)
}

// badSizes: Sum cannot report an error, so a short out or a wrong key
// length must panic; Verify must never accept with a wrong key length.
func (ot *oneTimeTest) badSizes(t *testing.T) {
	key, msg := ot.g.bytes(ot.alg.KeySize), ot.g.bytes(40)
	tag := ot.sum(msg, key)
	mustPanic(t, "Sum into a short out", func() { ot.m.Sum(make([]byte, ot.alg.TagSize-1), msg, key) })
	for _, n := range []int{0, ot.alg.KeySize - 1, ot.alg.KeySize + 1} {
		bad := append(clone(key), make([]byte, max(0, n-len(key)))...)[:n]
		mustPanic(t, fmt.Sprintf("Sum with a %d-byte key", n), func() { ot.sum(msg, bad) })
		var ok bool
		if v := panicValue(func() { ok = ot.m.Verify(tag, msg, bad) }); v == nil && ok {
			t.Errorf("Verify with a %d-byte key: accepted", n)
		}
	}
}
