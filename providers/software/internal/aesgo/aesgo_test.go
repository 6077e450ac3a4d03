package aesgo

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func mustCipher(t testing.TB, key []byte) cipher.Block {
	t.Helper()
	b, err := NewCipher(key)
	if err != nil {
		t.Fatalf("NewCipher(%d-byte key): %v", len(key), err)
	}
	return b
}

// FIPS-197 Appendix B and Appendix C.1-C.3.
var fipsVectors = []struct {
	name, key, plain, cipher string
}{
	{"B", "2b7e151628aed2a6abf7158809cf4f3c", "3243f6a8885a308d313198a2e0370734", "3925841d02dc09fbdc118597196a0b32"},
	{"C.1", "000102030405060708090a0b0c0d0e0f", "00112233445566778899aabbccddeeff", "69c4e0d86a7b0430d8cdb78070b4c55a"},
	{"C.2", "000102030405060708090a0b0c0d0e0f1011121314151617", "00112233445566778899aabbccddeeff", "dda97ca4864cdfe06eaf70a0ec0d7191"},
	{"C.3", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "00112233445566778899aabbccddeeff", "8ea2b7ca516745bfeafc49904b496089"},
}

func TestFIPS197Vectors(t *testing.T) {
	for _, v := range fipsVectors {
		t.Run(v.name, func(t *testing.T) {
			b := mustCipher(t, unhex(t, v.key))
			pt, ct := unhex(t, v.plain), unhex(t, v.cipher)
			got := make([]byte, BlockSize)
			b.Encrypt(got, pt)
			if !bytes.Equal(got, ct) {
				t.Errorf("Encrypt = %x, want %x", got, ct)
			}
			b.Decrypt(got, ct)
			if !bytes.Equal(got, pt) {
				t.Errorf("Decrypt = %x, want %x", got, pt)
			}
		})
	}
}

// FIPS-197 Appendix A: the first derived word and the last word of each
// key expansion.
func TestKeyExpansionAppendixA(t *testing.T) {
	cases := []struct {
		name, key   string
		firstIdx    int
		first, last uint32
	}{
		{"A.1", "2b7e151628aed2a6abf7158809cf4f3c", 4, 0xa0fafe17, 0xb6630ca6},
		{"A.2", "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b", 6, 0xfe0c91f7, 0x01002202},
		{"A.3", "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", 8, 0x9ba35411, 0x706c631e},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := mustCipher(t, unhex(t, c.key)).(*aesCipher)
			n := 4 * (a.rounds + 1)
			if a.enc[c.firstIdx] != c.first {
				t.Errorf("w[%d] = %08x, want %08x", c.firstIdx, a.enc[c.firstIdx], c.first)
			}
			if a.enc[n-1] != c.last {
				t.Errorf("w[%d] = %08x, want %08x", n-1, a.enc[n-1], c.last)
			}
		})
	}
}

func TestSboxSpotValues(t *testing.T) {
	// FIPS-197 §5.1.1 example and Figure 7 corners.
	for in, want := range map[byte]byte{0x00: 0x63, 0x53: 0xed, 0x01: 0x7c, 0xff: 0x16} {
		if sbox[in] != want {
			t.Errorf("sbox[%#02x] = %#02x, want %#02x", in, sbox[in], want)
		}
	}
	for i := 0; i < 256; i++ {
		if invSbox[sbox[i]] != byte(i) {
			t.Fatalf("invSbox is not the inverse of sbox at %#02x", i)
		}
	}
}

func TestAgainstCryptoAES(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{16, 24, 32} {
		for k := 0; k < 200; k++ {
			key := randBytes(rng, size)
			ours := mustCipher(t, key)
			ref, err := aes.NewCipher(key)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 20; i++ {
				compareBlock(t, key, ours, ref, randBytes(rng, BlockSize))
			}
		}
	}
}

func compareBlock(t *testing.T, key []byte, ours, ref cipher.Block, in []byte) {
	t.Helper()
	got, want := make([]byte, BlockSize), make([]byte, BlockSize)
	ours.Encrypt(got, in)
	ref.Encrypt(want, in)
	if !bytes.Equal(got, want) {
		t.Fatalf("key %x: Encrypt(%x) = %x, crypto/aes gives %x", key, in, got, want)
	}
	ours.Decrypt(got, in)
	ref.Decrypt(want, in)
	if !bytes.Equal(got, want) {
		t.Fatalf("key %x: Decrypt(%x) = %x, crypto/aes gives %x", key, in, got, want)
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestKeySizeError(t *testing.T) {
	for _, n := range []int{0, 1, 8, 15, 17, 20, 23, 25, 31, 33, 48, 64} {
		b, err := NewCipher(make([]byte, n))
		var kse KeySizeError
		if b != nil || !errors.As(err, &kse) || int(kse) != n {
			t.Errorf("NewCipher(%d bytes) = %v, %v; want nil, KeySizeError(%d)", n, b, err, n)
			continue
		}
		if want := fmt.Sprintf("aesgo: invalid key size %d", n); err.Error() != want {
			t.Errorf("error text %q, want %q", err, want)
		}
	}
}

// panics reports whether f panics.
func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}

// TestBufferRules checks that Encrypt and Decrypt panic exactly when
// crypto/aes does: short buffers and inexact overlap of the first blocks.
func TestBufferRules(t *testing.T) {
	key := make([]byte, 16)
	ours := mustCipher(t, key)
	ref, _ := aes.NewCipher(key)
	type span struct{ off, n int }
	var cases []struct{ dst, src span }
	for _, d := range []span{{0, 16}, {1, 16}, {15, 16}, {16, 16}, {0, 15}, {0, 32}, {8, 24}, {17, 16}, {32, 16}} {
		for _, s := range []span{{0, 16}, {0, 15}, {16, 16}, {0, 32}, {4, 16}, {31, 16}} {
			cases = append(cases, struct{ dst, src span }{d, s})
		}
	}
	for _, c := range cases {
		for _, op := range []string{"Encrypt", "Decrypt"} {
			buf := make([]byte, 64)
			dst, src := buf[c.dst.off:c.dst.off+c.dst.n], buf[c.src.off:c.src.off+c.src.n]
			want := panics(func() { call(ref, op, dst, src) })
			got := panics(func() { call(ours, op, dst, src) })
			if got != want {
				t.Errorf("%s dst=buf[%d:+%d] src=buf[%d:+%d]: panic=%v, crypto/aes panic=%v",
					op, c.dst.off, c.dst.n, c.src.off, c.src.n, got, want)
			}
		}
	}
}

func call(b cipher.Block, op string, dst, src []byte) {
	if op == "Encrypt" {
		b.Encrypt(dst, src)
	} else {
		b.Decrypt(dst, src)
	}
}

func TestInPlace(t *testing.T) {
	v := fipsVectors[1]
	b := mustCipher(t, unhex(t, v.key))
	buf := unhex(t, v.plain)
	b.Encrypt(buf, buf)
	if want := unhex(t, v.cipher); !bytes.Equal(buf, want) {
		t.Fatalf("in-place Encrypt = %x, want %x", buf, want)
	}
	b.Decrypt(buf, buf)
	if want := unhex(t, v.plain); !bytes.Equal(buf, want) {
		t.Fatalf("in-place Decrypt = %x, want %x", buf, want)
	}
}

// TestOnlyFirstBlock checks that only dst[:16] is written and only
// src[:16] is read, and that src is left alone.
func TestOnlyFirstBlock(t *testing.T) {
	b := mustCipher(t, make([]byte, 32))
	rng := rand.New(rand.NewPCG(3, 4))
	src := randBytes(rng, 48)
	srcCopy := bytes.Clone(src)
	short := make([]byte, BlockSize)
	b.Encrypt(short, src[:BlockSize])
	dst := randBytes(rng, 48)
	tail := bytes.Clone(dst[BlockSize:])
	b.Encrypt(dst, src)
	if !bytes.Equal(dst[:BlockSize], short) || !bytes.Equal(dst[BlockSize:], tail) {
		t.Errorf("Encrypt with long buffers wrote %x, want %x followed by untouched %x", dst, short, tail)
	}
	if !bytes.Equal(src, srcCopy) {
		t.Errorf("Encrypt modified src")
	}
}

// TestModes checks GCM and CTR built by crypto/cipher over this block
// against the same modes over crypto/aes.
func TestModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{16, 32} {
		key := randBytes(rng, size)
		ref, _ := aes.NewCipher(key)
		ours := mustCipher(t, key)
		for _, n := range []int{0, 1, 15, 16, 17, 1000, 4099} {
			msg, nonce, ad := randBytes(rng, n), randBytes(rng, 12), randBytes(rng, n%37)
			g1, _ := cipher.NewGCM(ours)
			g2, _ := cipher.NewGCM(ref)
			if a, b := g1.Seal(nil, nonce, msg, ad), g2.Seal(nil, nonce, msg, ad); !bytes.Equal(a, b) {
				t.Errorf("GCM key %d bytes, %d-byte message: differs from crypto/aes", size, n)
			}
			iv := randBytes(rng, 16)
			a, b := make([]byte, n), make([]byte, n)
			cipher.NewCTR(ours, iv).XORKeyStream(a, msg)
			cipher.NewCTR(ref, iv).XORKeyStream(b, msg)
			if !bytes.Equal(a, b) {
				t.Errorf("CTR key %d bytes, %d-byte message: differs from crypto/aes", size, n)
			}
		}
	}
}
