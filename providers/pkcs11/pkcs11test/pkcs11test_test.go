//go:build cgo && !nopkcs11

package pkcs11test_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/pkcs11test"
)

// TestMain skips the example, which needs SoftHSM, when SoftHSM is not
// installed, unless OFFLOAD_REQUIRE_TOOLS=1 (then it runs, and fails).
// NewToken skips (or fails) the tests by itself.
func TestMain(m *testing.M) {
	flag.Parse()
	if missing := pkcs11test.Missing(); missing != "" && !testenv.Required() {
		fmt.Printf("skipping the example: %s is missing; set %s=1 to make this a failure\n", missing, testenv.RequireEnv)
		flag.Set("test.skip", "^Example")
	}
	os.Exit(m.Run())
}

// TestKit uses the kit as its documentation shows: a token, a generated
// key and an imported one, both signing through their URIs, which carry
// pin-source and never the PIN.
func TestKit(t *testing.T) {
	tok := pkcs11test.NewToken(t)
	web := tok.GenerateKey(t, pkcs11.ECDSAP256, "web")
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	imported := tok.Import(t, edKey, "restored")
	for _, ref := range []string{web, imported, tok.TokenURI()} {
		if !strings.Contains(ref, "pin-source="+tok.PINFile) || strings.Contains(ref, tok.PIN) || !strings.Contains(ref, "module-path=") {
			t.Errorf("URI %q: want module-path and pin-source, no PIN", ref)
		}
	}
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	digest := sha256.Sum256([]byte("kit"))
	for ref, opts := range map[string]crypto.SignerOpts{web: crypto.SHA256, imported: crypto.Hash(0)} {
		s, err := p.Signer(context.Background(), ref)
		if err != nil {
			t.Fatalf("Signer(%s): %v", ref, err)
		}
		msg := digest[:]
		if opts == crypto.Hash(0) {
			msg = []byte("kit")
		}
		sig, err := s.Sign(rand.Reader, msg, opts)
		if err != nil {
			t.Fatal(err)
		}
		switch pub := s.Public().(type) {
		case *ecdsa.PublicKey:
			if pub.Curve != elliptic.P256() || !ecdsa.VerifyASN1(pub, msg, sig) {
				t.Errorf("%s: signature does not verify", ref)
			}
		case ed25519.PublicKey:
			if !pub.Equal(edKey.Public()) || !ed25519.Verify(pub, msg, sig) {
				t.Errorf("%s: not the imported key, or its signature does not verify", ref)
			}
		}
	}
	if env := tok.Environ(); len(env) != 1 || env[0] != "SOFTHSM2_CONF="+tok.ConfPath {
		t.Errorf("Environ = %q", env)
	}
}

// A throwaway token outside a test (an Example or TestMain): Start, and
// Close when done. In a test, NewToken(t) does both.
func ExampleStart() {
	tok, err := pkcs11test.Start()
	if err != nil {
		log.Fatal(err) // wraps ErrMissing when SoftHSM is not installed
	}
	defer tok.Close()
	keyURI, err := tok.Generate(pkcs11.Ed25519, "host")
	if err != nil {
		log.Fatal(err)
	}
	p, err := pkcs11.OpenURI(keyURI, pkcs11.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	s, err := p.Signer(context.Background(), keyURI)
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.Sign(rand.Reader, []byte("hello"), crypto.Hash(0))
	fmt.Println(strings.Contains(keyURI, "pin-source="), err)
	// Output: true <nil>
}
