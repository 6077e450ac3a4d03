package providertest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hmac"
	_ "crypto/md5"  // for crypto.MD5.New, the hash of hmac-md5
	_ "crypto/sha1" // for crypto.SHA1.New, the hash of hmac-sha1
	"hash"

	"github.com/offload/offload/provider"
	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/poly1305" //nolint:staticcheck // the reference Poly1305
)

// The reference implementations come from the standard library and
// golang.org/x/crypto. A nil result means the suite has no reference for
// the algorithm (a catalog entry added later), and the cross-checks are
// skipped with a note.

func refAEAD(alg *provider.Algorithm, key []byte) cipher.AEAD {
	switch alg.Name {
	case "aes128-gcm", "aes256-gcm":
		b, err := aes.NewCipher(key)
		if err != nil {
			return nil
		}
		a, err := cipher.NewGCM(b)
		if err != nil {
			return nil
		}
		return a
	case "chacha20-poly1305":
		a, err := chacha20poly1305.New(key)
		if err != nil {
			return nil
		}
		return a
	}
	return nil
}

func refStream(alg *provider.Algorithm, key, iv []byte) cipher.Stream {
	switch alg.Name {
	case "aes128-ctr", "aes192-ctr", "aes256-ctr":
		b, err := aes.NewCipher(key)
		if err != nil {
			return nil
		}
		return cipher.NewCTR(b, iv)
	}
	return nil
}

// refKeyStream XORs with ChaCha20 at an explicit counter; ok is false when
// there is no reference for alg.
func refKeyStream(alg *provider.Algorithm, key, nonce []byte, counter uint32, dst, src []byte) (ok bool) {
	if alg.Name != "chacha20" {
		return false
	}
	c, err := chacha20.NewUnauthenticatedCipher(key, nonce)
	if err != nil {
		return false
	}
	c.SetCounter(counter)
	c.XORKeyStream(dst, src)
	return true
}

func refMAC(alg *provider.Algorithm, key []byte) hash.Hash {
	if alg.Family != provider.FamilyMAC || !alg.Hash.Available() {
		return nil
	}
	return hmac.New(alg.Hash.New, key)
}

func refHash(alg *provider.Algorithm) hash.Hash {
	if alg.Family != provider.FamilyHash || !alg.Hash.Available() {
		return nil
	}
	return alg.Hash.New()
}

// refOneTimeMAC returns the Poly1305 tag, or nil without a reference.
func refOneTimeMAC(alg *provider.Algorithm, msg, key []byte) []byte {
	if alg.Name != "poly1305" || len(key) != 32 {
		return nil
	}
	var k [32]byte
	var out [16]byte
	copy(k[:], key)
	poly1305.Sum(&out, msg, &k)
	return out[:]
}

func refCurve(alg *provider.Algorithm) ecdh.Curve {
	switch alg.Name {
	case "x25519":
		return ecdh.X25519()
	case "ecdh-p256":
		return ecdh.P256()
	case "ecdh-p384":
		return ecdh.P384()
	case "ecdh-p521":
		return ecdh.P521()
	}
	return nil
}
