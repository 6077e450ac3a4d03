//go:build cgo && !nopkcs11

package pkcs11_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"

	"github.com/ThalesGroup/crypto11"
	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// TestCrypto11Interop checks offload's key objects against crypto11, an
// independent PKCS #11 client: keys offload makes are found and used by
// crypto11, keys crypto11 makes are opened by offload by label, and both
// libraries share the module in one process (one C_Initialize: offload
// sees the module already initialized and leaves C_Finalize to crypto11).
func TestCrypto11Interop(t *testing.T) {
	tok := softhsmtest.NewToken(t, "interop")
	ctx := context.Background()
	d := sha256.Sum256([]byte("interop"))

	// crypto11 first: it initializes the module.
	c11, err := crypto11.Configure(&crypto11.Config{Path: tok.Module, TokenLabel: tok.Label, Pin: tok.PIN})
	if err != nil {
		t.Fatalf("crypto11: %v", err)
	}
	defer c11.Close()
	theirs, err := c11.GenerateECDSAKeyPairWithLabel([]byte{0xc1}, []byte("made-by-crypto11"), elliptic.P384())
	if err != nil {
		t.Fatal(err)
	}

	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{HealthInterval: -1})
	if err != nil {
		t.Fatalf("offload beside crypto11: %v", err)
	}
	s, err := p.Signer(ctx, tok.URI("made-by-crypto11"))
	if err != nil {
		t.Fatalf("offload opening crypto11's key: %v", err)
	}
	if !s.Public().(*ecdsa.PublicKey).Equal(theirs.Public()) {
		t.Fatalf("offload read another public key than crypto11 made")
	}
	sig, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
	if err != nil || !ecdsa.VerifyASN1(theirs.Public().(*ecdsa.PublicKey), d[:], sig) {
		t.Errorf("offload signature with crypto11's key: %v", err)
	}

	mine := map[string]crypto.Signer{}
	for _, kt := range []pkcs11.KeyType{pkcs11.ECDSAP256, pkcs11.RSA2048} {
		u := uri.MustParse(tok.URI("made-by-offload-" + string(kt)))
		u.ID = []byte{0x0f, byte(len(mine))}
		s, err := p.Generate(ctx, u.Full(), kt)
		if err != nil {
			t.Fatal(err)
		}
		mine[u.Object] = s
	}
	// Closing offload must not finalize the module crypto11 still uses.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for label, s := range mine {
		k, err := c11.FindKeyPair(nil, []byte(label))
		if err != nil || k == nil {
			t.Fatalf("crypto11 finding %s: %v", label, err)
		}
		sig, err := k.Sign(rand.Reader, d[:], crypto.SHA256)
		if err != nil {
			t.Fatalf("crypto11 signing with %s: %v", label, err)
		}
		switch pub := s.Public().(type) {
		case *ecdsa.PublicKey:
			if !ecdsa.VerifyASN1(pub, d[:], sig) {
				t.Errorf("%s: crypto11's signature does not verify under offload's public key", label)
			}
		case *rsa.PublicKey:
			if rsa.VerifyPKCS1v15(pub, crypto.SHA256, d[:], sig) != nil {
				t.Errorf("%s: crypto11's signature does not verify under offload's public key", label)
			}
		}
	}
}
