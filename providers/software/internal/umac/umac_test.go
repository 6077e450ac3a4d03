package umac

import (
	"crypto/aes"
	"encoding/hex"
	"strings"
	"testing"
)

// The test vectors of RFC 4418 §9: key "abcdefghijklmnop", nonce
// "bcdefghi" (the RFC lists UMAC-32, -64 and -96).
var rfcVectors = []struct {
	msg  string
	tags map[int]string
}{
	{"", map[int]string{4: "113145FB", 8: "6E155FAD26900BE1", 12: "32FEDB100C79AD58F07FF764"}},
	{"aaa", map[int]string{4: "3B91D102", 8: "44B5CB542F220104", 12: "185E4FE905CBA7BD85E4C2DC"}},
	{strings.Repeat("a", 1<<10), map[int]string{4: "599B350B", 8: "26BF2F5D60118BD9", 12: "7A54ABE04AF82D60FB298C3C"}},
	{strings.Repeat("a", 1<<15), map[int]string{4: "58DCF532", 8: "27F8EF643B0D118D", 12: "7B136BD911E4B734286EF2BE"}},
	{strings.Repeat("a", 1<<20), map[int]string{4: "DB6364D1", 8: "A4477E87E9F55853", 12: "F8ACFA3AC31CFEEA047F7B11"}},
	{"abc", map[int]string{4: "ABF3A3A0", 8: "D4D7B9F6BD4FBFCF", 12: "883C3D4B97A61976FFCF2323"}},
	{strings.Repeat("abc", 500), map[int]string{4: "ABEB3C8B", 8: "D4CF26DDEFD5C01A", 12: "8824A260C53C66A36C9260A6"}},
}

func newKey(t *testing.T, tagLen int) *Key {
	t.Helper()
	b, err := aes.NewCipher([]byte("abcdefghijklmnop"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := New(b, aes.NewCipher, tagLen)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRFC4418Vectors(t *testing.T) {
	for _, tagLen := range []int{4, 8, 12} {
		k := newKey(t, tagLen)
		for _, v := range rfcVectors {
			got := strings.ToUpper(hex.EncodeToString(k.Tag(nil, []byte("bcdefghi"), []byte(v.msg))))
			if want := v.tags[tagLen]; got != want {
				t.Errorf("UMAC-%d of %d bytes: got %s, want %s", tagLen*32/4, len(v.msg), got, want)
			}
		}
	}
}

// UMAC-128 (not in the RFC's table) extends UMAC-96 by one iteration: its
// first 12 bytes differ from UMAC-96 only by the pad, which for 12- and
// 16-byte tags is the same AES output's prefix.
func TestUMAC128PrefixIsUMAC96(t *testing.T) {
	k96, k128 := newKey(t, 12), newKey(t, 16)
	for _, v := range rfcVectors {
		a := k96.Tag(nil, []byte("bcdefghi"), []byte(v.msg))
		b := k128.Tag(nil, []byte("bcdefghi"), []byte(v.msg))
		if len(b) != 16 || hex.EncodeToString(b[:12]) != hex.EncodeToString(a) {
			t.Errorf("%d bytes: UMAC-128 %x does not extend UMAC-96 %x", len(v.msg), b, a)
		}
	}
}

func TestBadTagLength(t *testing.T) {
	b, _ := aes.NewCipher(make([]byte, 16))
	for _, n := range []int{0, 5, 20} {
		if _, err := New(b, aes.NewCipher, n); err == nil {
			t.Errorf("tag length %d accepted", n)
		}
	}
}

func BenchmarkUMAC64(b *testing.B) {
	blk, _ := aes.NewCipher(make([]byte, 16))
	k, _ := New(blk, aes.NewCipher, 8)
	msg := make([]byte, 32768)
	nonce := make([]byte, 8)
	out := make([]byte, 0, 8)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		out = k.Tag(out[:0], nonce, msg)
	}
}

// FuzzTag: any nonce and message give a tag of the right size, the same
// one twice, and a different one when the message changes in one bit.
func FuzzTag(f *testing.F) {
	f.Add([]byte("bcdefghi"), []byte("abc"), uint8(8))
	f.Add([]byte{}, make([]byte, 1025), uint8(16))
	f.Fuzz(func(t *testing.T, nonce, msg []byte, n uint8) {
		tagLen := 4 * (1 + int(n)%4)
		if len(nonce) > 16 {
			nonce = nonce[:16]
		}
		k := newKey(t, tagLen)
		a := k.Tag(nil, nonce, msg)
		if len(a) != tagLen || string(k.Tag(nil, nonce, msg)) != string(a) {
			t.Fatalf("tag %x of %d bytes for a %d-byte tag, or not repeatable", a, len(a), tagLen)
		}
		if len(msg) > 0 {
			m := append([]byte(nil), msg...)
			m[len(m)/2] ^= 1
			if string(k.Tag(nil, nonce, m)) == string(a) && tagLen >= 8 {
				t.Fatalf("a changed message kept the tag %x", a)
			}
		}
	})
}
