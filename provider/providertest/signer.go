package providertest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"testing"

	"github.com/offload/offload/provider"
)

// minRSABits is the smallest RSA modulus the suite accepts.
const minRSABits = 2048

// TestSigner tests a signer for alg: the public key has the catalog's type,
// curve and size, signatures over several messages verify with the
// standard library verifier (ed25519.Verify, ecdsa.VerifyASN1,
// rsa.VerifyPKCS1v15, rsa.VerifyPSS) and do not verify for another
// message, and bad options give an error, not a panic.
func TestSigner(t *testing.T, s crypto.Signer, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilySignature)
	if s == nil {
		t.Fatalf("nil signer for %s", alg.Name)
	}
	v, err := verifierFor(alg, s.Public())
	if err != nil {
		t.Fatalf("%s: %v", alg.Name, err)
	}
	t.Run("SignVerify", func(t *testing.T) {
		msgs := [][]byte{nil, []byte("a"), []byte("offload conformance suite"), make([]byte, 1000)}
		for i, msg := range msgs {
			sig, err := signMessage(s, alg, msg)
			if err != nil {
				t.Errorf("message %d: Sign: %v", i, err)
				continue
			}
			if !v(msg, sig) {
				t.Errorf("message %d (%d bytes): signature %s does not verify", i, len(msg), short(sig))
			}
			other := msgs[(i+1)%len(msgs)]
			if v(other, sig) {
				t.Errorf("message %d: signature also verifies for message %d", i, (i+1)%len(msgs))
			}
			if v(append(clone(msg), 0), sig) {
				t.Errorf("message %d: signature also verifies for the message with a byte appended", i)
			}
		}
	})
	t.Run("BadOptions", func(t *testing.T) { badSignOptions(t, s, alg) })
}

// verifierFor checks the public key against alg and returns a verifier of
// signatures over whole messages.
func verifierFor(alg *provider.Algorithm, pub crypto.PublicKey) (func(msg, sig []byte) bool, error) {
	switch {
	case alg.Name == "ed25519":
		k, ok := pub.(ed25519.PublicKey)
		if !ok || len(k) != alg.PublicKeySize {
			return nil, fmt.Errorf("public key %T (%d bytes) is not a %d-byte ed25519.PublicKey", pub, len(k), alg.PublicKeySize)
		}
		return func(msg, sig []byte) bool { return ed25519.Verify(k, msg, sig) }, nil
	case alg.Hash != 0 && alg.PublicKeySize != 0: // ECDSA
		k, ok := pub.(*ecdsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("public key %T is not an *ecdsa.PublicKey", pub)
		}
		if n := 1 + 2*((k.Curve.Params().BitSize+7)/8); n != alg.PublicKeySize {
			return nil, fmt.Errorf("curve %s gives %d-byte points, catalog says %d", k.Curve.Params().Name, n, alg.PublicKeySize)
		}
		if want := curveFor(alg); want == nil || k.Curve != want {
			return nil, fmt.Errorf("curve %s is not the one %s names", k.Curve.Params().Name, alg.Name)
		}
		return func(msg, sig []byte) bool { return ecdsa.VerifyASN1(k, digest(alg, msg), sig) }, nil
	case alg.Hash != 0: // RSA
		k, ok := pub.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("public key %T is not an *rsa.PublicKey", pub)
		}
		if k.N.BitLen() < minRSABits {
			return nil, fmt.Errorf("RSA key of %d bits, want at least %d", k.N.BitLen(), minRSABits)
		}
		if alg.PSS {
			return func(msg, sig []byte) bool {
				return rsa.VerifyPSS(k, alg.Hash, digest(alg, msg), sig, pssOptions(alg)) == nil
			}, nil
		}
		return func(msg, sig []byte) bool { return rsa.VerifyPKCS1v15(k, alg.Hash, digest(alg, msg), sig) == nil }, nil
	}
	return nil, fmt.Errorf("the suite does not know how to verify %s", alg.Name)
}

func curveFor(alg *provider.Algorithm) elliptic.Curve {
	switch alg.Name {
	case "ecdsa-p256-sha256":
		return elliptic.P256()
	case "ecdsa-p384-sha384":
		return elliptic.P384()
	case "ecdsa-p521-sha512":
		return elliptic.P521()
	}
	return nil
}

// pssOptions: salt as long as the hash, which PKCS #11 tokens and TLS use.
func pssOptions(alg *provider.Algorithm) *rsa.PSSOptions {
	return &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: alg.Hash}
}

func digest(alg *provider.Algorithm, msg []byte) []byte {
	h := alg.Hash.New()
	h.Write(msg)
	return h.Sum(nil)
}

// signMessage signs msg as alg prescribes: Ed25519 over the message, the
// others over its digest. A panic is returned as an error.
func signMessage(s crypto.Signer, alg *provider.Algorithm, msg []byte) (sig []byte, err error) {
	input, opts := msg, crypto.SignerOpts(crypto.Hash(0))
	if alg.Hash != 0 {
		input, opts = digest(alg, msg), alg.Hash
		if alg.PSS {
			opts = pssOptions(alg)
		}
	}
	if v := panicValue(func() { sig, err = s.Sign(rand.Reader, input, opts) }); v != nil {
		return nil, fmt.Errorf("Sign panicked: %v", v)
	}
	return sig, err
}

// badSignOptions: Ed25519 asked to sign a SHA-256 digest, and RSA given a
// digest of the wrong length, must give an error without panicking.
func badSignOptions(t *testing.T, s crypto.Signer, alg *provider.Algorithm) {
	var input []byte
	var opts crypto.SignerOpts
	switch {
	case alg.Name == "ed25519":
		input, opts = digest(provider.MustLookup("sha256"), []byte("x")), crypto.SHA256
	case alg.Hash != 0 && alg.PublicKeySize == 0: // RSA
		input, opts = make([]byte, alg.Hash.Size()-1), alg.Hash
	default:
		t.Skipf("no bad options to try for %s", alg.Name)
	}
	var err error
	if noPanic(t, "Sign with bad options", func() { _, err = s.Sign(rand.Reader, input, opts) }) && err == nil {
		t.Errorf("Sign(%d-byte input, %v) succeeded, want an error", len(input), opts.HashFunc())
	}
}

// TestKeyGenerator generates an ephemeral key for alg (empty reference),
// runs TestSigner on it, checks two keys differ, and checks that an
// algorithm of another family is refused.
func TestKeyGenerator(t *testing.T, g provider.KeyGenerator, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilySignature)
	ctx := context.Background()
	s := generate(t, g, ctx, alg)
	defer release(t, s)
	TestSigner(t, s, alg)
	t.Run("Distinct", func(t *testing.T) {
		if alg.Hash != 0 && alg.PublicKeySize == 0 && testing.Short() {
			t.Skip("RSA key generation is slow; skipped in -short mode")
		}
		s2 := generate(t, g, ctx, alg)
		defer release(t, s2)
		type equaler interface{ Equal(crypto.PublicKey) bool }
		if e, ok := s.Public().(equaler); ok && e.Equal(s2.Public()) {
			t.Errorf("two generated keys have the same public key")
		}
	})
	t.Run("BadAlgorithm", func(t *testing.T) {
		other := otherFamily(provider.FamilySignature)
		var s crypto.Signer
		var err error
		if noPanic(t, "GenerateSigner("+other.Name+")", func() { s, err = g.GenerateSigner(ctx, other, "") }) && err == nil {
			t.Errorf("GenerateSigner(%s): accepted an algorithm of family %s", other.Name, other.Family)
			release(t, s)
		}
	})
}

func generate(t *testing.T, g provider.KeyGenerator, ctx context.Context, alg *provider.Algorithm) crypto.Signer {
	t.Helper()
	var s crypto.Signer
	var err error
	if !noPanic(t, "GenerateSigner", func() { s, err = g.GenerateSigner(ctx, alg, "") }) {
		t.FailNow()
	}
	if err != nil || s == nil {
		t.Fatalf("GenerateSigner(%s) = %v, %v", alg.Name, s, err)
	}
	return s
}
