package sntrup761

import (
	"bytes"
	"crypto/rand"
	mrand "math/rand/v2"
	"slices"
	"testing"
)

func TestFreeze(t *testing.T) {
	for x := int32(-1 << 20); x <= 1<<20; x += 7 {
		want3 := ((x % 3) + 3) % 3
		if want3 == 2 {
			want3 = -1
		}
		if got := freeze3(x); int32(got) != want3 {
			t.Fatalf("freeze3(%d) = %d, want %d", x, got, want3)
		}
		wantQ := ((x % q) + q) % q
		if wantQ > q12 {
			wantQ -= q
		}
		if got := freezeQ(x); int32(got) != wantQ {
			t.Fatalf("freezeQ(%d) = %d, want %d", x, got, wantQ)
		}
	}
	for a := int16(-q12); a <= q12; a++ {
		if a != 0 && freezeQ(int32(a)*int32(reciprocalQ(a))) != 1 {
			t.Fatalf("reciprocalQ(%d) wrong", a)
		}
	}
}

func TestSortNetwork(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 5, 64, 100, p} {
		x := make([]uint32, n)
		for i := range x {
			x[i] = mrand.Uint32()
			if i%5 == 0 && i > 0 {
				x[i] = x[i-1] // duplicates
			}
		}
		want := slices.Clone(x)
		slices.Sort(want)
		sortNetwork(x)
		if !slices.Equal(x, want) {
			t.Fatalf("n=%d: not sorted", n)
		}
	}
}

func TestEncodings(t *testing.T) {
	h := make([]int16, p)
	c := make([]int16, p)
	for i := range h {
		h[i] = int16(mrand.IntN(q) - q12)
		c[i] = int16(3*mrand.IntN((q+2)/3) - q12)
	}
	if b := encodeRq(h); len(b) != rqBytes || !slices.Equal(decodeRq(b), h) {
		t.Errorf("R/q encoding: %d bytes, round trip %v", len(b), slices.Equal(decodeRq(b), h))
	}
	if b := encodeRounded(c); len(b) != roundedBytes || !slices.Equal(decodeRounded(b), c) {
		t.Errorf("rounded encoding: %d bytes", len(b))
	}
	f, _ := smallRandom(ReaderSource{rand.Reader})
	if !slices.Equal(decodeSmall(encodeSmall(f)), f) {
		t.Error("small encoding round trip")
	}
	// The extremes: all zero and all q-1 (centred: q12).
	for _, v := range []int16{-q12, q12} {
		for i := range h {
			h[i] = v
		}
		if !slices.Equal(decodeRq(encodeRq(h)), h) {
			t.Errorf("R/q encoding of all %d", v)
		}
	}
}

// TestReciprocals checks 1/g in R/3 and 1/(3f) in R/q by multiplying
// back, and that a non-invertible input is reported.
func TestReciprocals(t *testing.T) {
	src := ReaderSource{rand.Reader}
	one := make([]int8, p)
	one[0] = 1
	for range 3 {
		g, _ := smallRandom(src)
		if ginv, ok := recip3(g); ok && !slices.Equal(mult3(g, ginv), one) {
			t.Fatal("g * recip3(g) != 1")
		}
		f, _ := shortRandom(src)
		finv, ok := recipQ3(f)
		if !ok {
			t.Fatal("3f not invertible in R/q")
		}
		prod := multRq(finv, f)
		for i := range prod {
			prod[i] = freezeQ(3 * int32(prod[i]))
		}
		if prod[0] != 1 || slices.ContainsFunc(prod[1:], func(x int16) bool { return x != 0 }) {
			t.Fatal("3f * recipQ3(f) != 1")
		}
	}
	// Zero is never invertible.
	if _, ok := recip3(make([]int8, p)); ok {
		t.Error("recip3(0) reported invertible")
	}
}

func TestShortWeight(t *testing.T) {
	r, err := shortRandom(ReaderSource{rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range r {
		if x != 0 {
			n++
		}
	}
	if n != w {
		t.Fatalf("weight %d, want %d", n, w)
	}
}

func TestRoundTripAndRejection(t *testing.T) {
	src := ReaderSource{rand.Reader}
	pk, sk, err := GenerateKey(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(pk) != PublicKeySize || len(sk) != SecretKeySize {
		t.Fatalf("sizes %d %d", len(pk), len(sk))
	}
	ct, ss, err := Encapsulate(src, pk)
	if err != nil || len(ct) != CiphertextSize || len(ss) != SharedKeySize {
		t.Fatalf("Encapsulate: %v, %d, %d", err, len(ct), len(ss))
	}
	got, err := Decapsulate(sk, ct)
	if err != nil || !bytes.Equal(got, ss) {
		t.Fatalf("Decapsulate: %v", err)
	}
	for _, i := range []int{0, roundedBytes / 2, CiphertextSize - 1} {
		bad := slices.Clone(ct)
		bad[i] ^= 4
		k1, err1 := Decapsulate(sk, bad)
		k2, err2 := Decapsulate(sk, bad)
		if err1 != nil || err2 != nil || bytes.Equal(k1, ss) || !bytes.Equal(k1, k2) {
			t.Fatalf("byte %d changed: %v %v, same key as before %v, deterministic %v", i, err1, err2, bytes.Equal(k1, ss), bytes.Equal(k1, k2))
		}
		rho := sk[2*smallBytes+PublicKeySize : 3*smallBytes+PublicKeySize]
		if !bytes.Equal(k1, hashSession(0, rho, bad)) {
			t.Fatalf("byte %d changed: the key is not the rejection key", i)
		}
	}
	if _, err := Decapsulate(sk, ct[1:]); err == nil {
		t.Error("short ciphertext accepted")
	}
}

// TestPublicKeyChecks: wrong lengths and a non-canonical encoding (a
// value at or above q in the top radix) are refused.
func TestPublicKeyChecks(t *testing.T) {
	pk, _, err := GenerateKey(ReaderSource{rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	src := ReaderSource{rand.Reader}
	bad := slices.Clone(pk)
	bad[len(bad)-1], bad[len(bad)-2] = 0xff, 0xff
	for name, k := range map[string][]byte{"empty": nil, "short": pk[:len(pk)-1], "long": append(slices.Clone(pk), 0), "non-canonical": bad} {
		if _, _, err := Encapsulate(src, k); err == nil {
			t.Errorf("%s public key accepted", name)
		}
	}
}

func FuzzEncapsulate(f *testing.F) {
	pk, _, _ := GenerateKey(ReaderSource{rand.Reader})
	f.Add(pk)
	f.Add(make([]byte, PublicKeySize))
	f.Fuzz(func(t *testing.T, in []byte) {
		ct, ss, err := Encapsulate(ReaderSource{rand.Reader}, in)
		if err == nil && (len(ct) != CiphertextSize || len(ss) != SharedKeySize) {
			t.Fatal("sizes")
		}
	})
}

func FuzzDecapsulate(f *testing.F) {
	pk, sk, _ := GenerateKey(ReaderSource{rand.Reader})
	ct, _, _ := Encapsulate(ReaderSource{rand.Reader}, pk)
	f.Add(ct)
	f.Fuzz(func(t *testing.T, in []byte) {
		ss, err := Decapsulate(sk, in)
		if err == nil && len(ss) != SharedKeySize {
			t.Fatal("size")
		}
	})
}

func BenchmarkEncapsulate(b *testing.B) {
	pk, _, _ := GenerateKey(ReaderSource{rand.Reader})
	for b.Loop() {
		Encapsulate(ReaderSource{rand.Reader}, pk)
	}
}

func BenchmarkGenerateKey(b *testing.B) {
	for b.Loop() {
		GenerateKey(ReaderSource{rand.Reader})
	}
}
