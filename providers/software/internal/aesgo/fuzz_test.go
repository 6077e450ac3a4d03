package aesgo

import (
	"bytes"
	"crypto/aes"
	"testing"
)

// FuzzAgainstCryptoAES compares one block in both directions with
// crypto/aes for any key and input; keys of bad length must give a
// KeySizeError from both.
func FuzzAgainstCryptoAES(f *testing.F) {
	for _, v := range fipsVectors {
		f.Add(unhex(f, v.key), unhex(f, v.plain))
	}
	f.Add([]byte("short key"), make([]byte, 16))
	f.Fuzz(func(t *testing.T, key, in []byte) {
		ref, refErr := aes.NewCipher(key)
		ours, err := NewCipher(key)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("%d-byte key: error %v, crypto/aes says %v", len(key), err, refErr)
		}
		if err != nil {
			if _, ok := err.(KeySizeError); !ok {
				t.Fatalf("error %T, want KeySizeError", err)
			}
			return
		}
		if len(in) < BlockSize {
			return
		}
		got, want := make([]byte, BlockSize), make([]byte, BlockSize)
		ours.Encrypt(got, in)
		ref.Encrypt(want, in)
		if !bytes.Equal(got, want) {
			t.Fatalf("Encrypt: %x, crypto/aes %x", got, want)
		}
		ours.Decrypt(got, in)
		ref.Decrypt(want, in)
		if !bytes.Equal(got, want) {
			t.Fatalf("Decrypt: %x, crypto/aes %x", got, want)
		}
	})
}
