package aesgo

import (
	"crypto/aes"
	"crypto/cipher"
	"strconv"
	"testing"
)

func BenchmarkEncrypt(b *testing.B) {
	for _, size := range []int{16, 32} {
		b.Run(keyName(size), func(b *testing.B) {
			c := mustCipher(b, make([]byte, size))
			buf := make([]byte, BlockSize)
			b.SetBytes(BlockSize)
			for b.Loop() {
				c.Encrypt(buf, buf)
			}
		})
	}
}

func BenchmarkDecrypt(b *testing.B) {
	c := mustCipher(b, make([]byte, 16))
	buf := make([]byte, BlockSize)
	b.SetBytes(BlockSize)
	for b.Loop() {
		c.Decrypt(buf, buf)
	}
}

func BenchmarkExpandKey(b *testing.B) {
	key := make([]byte, 32)
	for b.Loop() {
		if _, err := NewCipher(key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGCM seals with cipher.NewGCM over this block; the crypto/aes
// rows are there for comparison on the same machine.
func BenchmarkGCM(b *testing.B) {
	impls := []struct {
		name string
		make func([]byte) (cipher.Block, error)
	}{{"aesgo", NewCipher}, {"crypto-aes", aes.NewCipher}}
	for _, impl := range impls {
		for _, n := range []int{1024, 16384} {
			b.Run(impl.name+"/"+sizeName(n), func(b *testing.B) {
				blk, err := impl.make(make([]byte, 16))
				if err != nil {
					b.Fatal(err)
				}
				g, err := cipher.NewGCM(blk)
				if err != nil {
					b.Fatal(err)
				}
				buf := make([]byte, n, n+g.Overhead())
				nonce := make([]byte, g.NonceSize())
				b.SetBytes(int64(n))
				for b.Loop() {
					g.Seal(buf[:0], nonce, buf, nil)
				}
			})
		}
	}
}

func BenchmarkCTR16K(b *testing.B) {
	c := mustCipher(b, make([]byte, 16))
	buf := make([]byte, 16384)
	s := cipher.NewCTR(c, make([]byte, BlockSize))
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		s.XORKeyStream(buf, buf)
	}
}

func keyName(size int) string {
	return map[int]string{16: "AES-128", 24: "AES-192", 32: "AES-256"}[size]
}

func sizeName(n int) string {
	if n%1024 == 0 {
		return strconv.Itoa(n/1024) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
