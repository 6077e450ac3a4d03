package providertest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"fmt"
	"testing"

	"github.com/offload/offload/provider"
)

// TestBlock tests the block cipher (AES, 3DES) p builds for alg: key
// checks, known answers, agreement with the standard library in both
// directions, and the cipher.Block rules (block size, in-place use).
func TestBlock(t *testing.T, p provider.BlockProvider, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilyBlock)
	g := newRNG(t)
	newBlock := func(t *testing.T, key []byte) cipher.Block {
		t.Helper()
		var b cipher.Block
		var err error
		if !noPanic(t, "NewBlock", func() { b, err = p.NewBlock(alg, key) }) {
			t.FailNow()
		}
		if err != nil || b == nil {
			t.Fatalf("NewBlock(%s, %d-byte key) = %v, %v", alg.Name, len(key), b, err)
		}
		return b
	}
	t.Run("BadKeys", func(t *testing.T) {
		for _, n := range badKeySizes(alg.KeySize) {
			var b cipher.Block
			var err error
			what := fmt.Sprintf("NewBlock(%s, %d-byte key)", alg.Name, n)
			if noPanic(t, what, func() { b, err = p.NewBlock(alg, g.bytes(n)) }) {
				wantKeySizeError(t, what, err)
				release(t, b)
			}
		}
		other := otherFamily(provider.FamilyBlock)
		var b cipher.Block
		var err error
		if noPanic(t, "NewBlock("+other.Name+")", func() { b, err = p.NewBlock(other, g.bytes(alg.KeySize)) }) && err == nil {
			t.Errorf("NewBlock(%s): accepted an algorithm of family %s", other.Name, other.Family)
			release(t, b)
		}
	})
	t.Run("KnownAnswers", func(t *testing.T) {
		vs := blockVectors[alg.Name]
		if len(vs) == 0 {
			t.Skipf("no known-answer vectors for %s", alg.Name)
		}
		for _, v := range vs {
			b := newBlock(t, unhex(v.key))
			pt, want := unhex(v.plain), unhex(v.cipher)
			got := make([]byte, len(pt))
			for i := 0; i < len(pt); i += alg.BlockSize {
				b.Encrypt(got[i:], pt[i:])
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: got %x, want %x", v.source, got, want)
			}
			for i := 0; i < len(got); i += alg.BlockSize {
				b.Decrypt(got[i:], got[i:]) // in place
			}
			if !bytes.Equal(got, pt) {
				t.Errorf("%s: decrypting gave %x, want %x", v.source, got, pt)
			}
			release(t, b)
		}
	})
	t.Run("Reference", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			key := g.bytes(alg.KeySize)
			ref := refBlock(alg, key)
			if ref == nil {
				t.Skipf("no reference for %s", alg.Name)
			}
			b := newBlock(t, key)
			if b.BlockSize() != alg.BlockSize {
				t.Fatalf("BlockSize() = %d, catalog says %d", b.BlockSize(), alg.BlockSize)
			}
			msg := g.bytes(alg.BlockSize * (1 + g.intn(8)))
			want, got := make([]byte, len(msg)), make([]byte, len(msg))
			cipher.NewCBCEncrypter(ref, make([]byte, alg.BlockSize)).CryptBlocks(want, msg)
			cipher.NewCBCEncrypter(b, make([]byte, alg.BlockSize)).CryptBlocks(got, msg)
			if !bytes.Equal(got, want) {
				t.Errorf("key %x: CBC over the block gives %s, reference %s", key, short(got), short(want))
			}
			cipher.NewCBCDecrypter(b, make([]byte, alg.BlockSize)).CryptBlocks(got, got)
			if !bytes.Equal(got, msg) {
				t.Errorf("key %x: decrypting does not give the message back", key)
			}
			release(t, b)
		}
	})
}

// refBlock is the standard library's block cipher for alg, or nil.
func refBlock(alg *provider.Algorithm, key []byte) cipher.Block {
	var b cipher.Block
	var err error
	switch alg.Name {
	case "aes128", "aes192", "aes256":
		b, err = aes.NewCipher(key)
	case "3des":
		b, err = des.NewTripleDESCipher(key)
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	return b
}

type blockVector struct {
	source             string
	key, plain, cipher string
}

// blockVectors: FIPS-197 Appendix C and the SP 800-67 (rev. 1) Appendix B
// TDEA example.
var blockVectors = map[string][]blockVector{
	"aes128": {{"FIPS-197 C.1", "000102030405060708090a0b0c0d0e0f", "00112233445566778899aabbccddeeff",
		"69c4e0d86a7b0430d8cdb78070b4c55a"}},
	"aes192": {{"FIPS-197 C.2", "000102030405060708090a0b0c0d0e0f1011121314151617", "00112233445566778899aabbccddeeff",
		"dda97ca4864cdfe06eaf70a0ec0d7191"}},
	"aes256": {{"FIPS-197 C.3", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"00112233445566778899aabbccddeeff", "8ea2b7ca516745bfeafc49904b496089"}},
	"3des": {{"SP 800-67 B.1", "0123456789abcdef23456789abcdef01456789abcdef0123", hexOf("The qufck brown fox jump"),
		"a826fd8ce53b855fcce21c8112256fe668d5c05dd9b6b900"}},
}
