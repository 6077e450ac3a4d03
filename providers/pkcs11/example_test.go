//go:build cgo && !nopkcs11

package pkcs11_test

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/pkcs11test"
)

// TestMain skips the examples, which need a SoftHSM token, when SoftHSM
// is not installed — unless OFFLOAD_REQUIRE_TOOLS=1, which makes them run
// (and fail).
func TestMain(m *testing.M) {
	flag.Parse()
	if missing := pkcs11test.Missing(); missing != "" && !testenv.Required() {
		fmt.Printf("skipping the examples: %s is missing; set %s=1 to make this a failure\n", missing, testenv.RequireEnv)
		skip := flag.Lookup("test.skip")
		if old := skip.Value.String(); old != "" {
			skip.Value.Set(old + "|^Example")
		} else {
			skip.Value.Set("^Example")
		}
	}
	os.Exit(m.Run())
}

// A crypto/tls server whose certificate key never leaves a PKCS #11
// token. The token is a throwaway SoftHSM one; in production the URI
// names your HSM, with module-name (or module-path) and pin-source.
func Example_tlsServer() {
	tok, err := pkcs11test.Start() // a throwaway token; tok.URI adds module-path and pin-source
	if err != nil {
		log.Fatal(err)
	}
	defer tok.Close()
	keyURI := tok.URI("web") // pkcs11:token=...;object=web?module-path=...&pin-source=...

	p, err := pkcs11.OpenURI(keyURI, pkcs11.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	// Once, at setup (or `offload keys generate -type ecdsa-p256 URI`).
	if _, err := p.Generate(context.Background(), keyURI, pkcs11.ECDSAP256); err != nil {
		log.Fatal(err)
	}

	key, err := p.Signer(context.Background(), keyURI) // a crypto.Signer
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key) // signed on the token
	if err != nil {
		log.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			io.Copy(c, c)
			c.Close()
		}
	}()

	roots := x509.NewCertPool()
	roots.AddCert(cert)
	c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "localhost"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "hello")
	reply := make([]byte, 5)
	io.ReadFull(c, reply)
	fmt.Println(string(reply), c.ConnectionState().Version == tls.VersionTLS13)
	// Output: hello true
}

// An SSH signer (golang.org/x/crypto/ssh) for a key in a token, as a host
// key or a client key.
func ExampleProvider_Signer_ssh() {
	tok, err := pkcs11test.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer tok.Close()
	keyURI, err := tok.Generate(pkcs11.Ed25519, "host") // made inside the token
	if err != nil {
		log.Fatal(err)
	}

	p, err := pkcs11.OpenURI(keyURI, pkcs11.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	key, err := p.Signer(context.Background(), keyURI)
	if err != nil {
		log.Fatal(err)
	}
	signer, err := ssh.NewSignerFromSigner(key)
	if err != nil {
		log.Fatal(err)
	}
	sig, err := signer.Sign(rand.Reader, []byte("exchange hash"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(signer.PublicKey().Type(), signer.PublicKey().Verify([]byte("exchange hash"), sig) == nil)
	// Output: ssh-ed25519 true
}

// ECDH with the ephemeral private key on a token: the shared secret is
// the one a peer computes in Go.
func ExampleProvider_NewKeyAgreement() {
	tok, err := pkcs11test.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer tok.Close()
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	ka, err := p.NewKeyAgreement(provider.MustLookup("ecdh-p256"))
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Release(ka)
	peer, _ := ecdh.P256().GenerateKey(rand.Reader)
	onToken, err := ka.SharedSecret(peer.PublicKey().Bytes())
	if err != nil {
		log.Fatal(err)
	}
	tokenPub, _ := ecdh.P256().NewPublicKey(ka.PublicKey())
	inGo, _ := peer.ECDH(tokenPub)
	fmt.Println("shared secrets match:", bytes.Equal(onToken, inGo))
	// Output: shared secrets match: true
}

// Generate and List: key pairs made in the token, found again by URI.
func ExampleProvider_List() {
	tok, err := pkcs11test.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer tok.Close()
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	for _, k := range []struct {
		label string
		kt    pkcs11.KeyType
	}{{"ssh-host", pkcs11.Ed25519}, {"tls-web", pkcs11.ECDSAP384}} {
		if _, err := p.Generate(ctx, tok.URI(k.label), k.kt); err != nil {
			log.Fatal(err)
		}
	}
	keys, err := p.List(ctx, tok.TokenURI())
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range keys {
		fmt.Println(k.Label, k.Type, "sensitive:", k.Sensitive, "extractable:", k.Extractable)
	}
	// Unordered output:
	// ssh-host ed25519 sensitive: true extractable: false
	// tls-web ecdsa-p384 sensitive: true extractable: false
}

// A registry with a token beside the CPU and software providers: the
// signer comes from the token by its URI, and Explain says who serves AES.
func ExampleOpen_registry() {
	tok, err := pkcs11test.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer tok.Close()
	keyURI, err := tok.Generate(pkcs11.ECDSAP256, "host")
	if err != nil {
		log.Fatal(err)
	}

	p, err := pkcs11.Open(pkcs11.Config{ModulePath: tok.Module, PINSource: tok.PINFile})
	if err != nil {
		log.Fatal(err)
	}
	reg := provider.New(provider.Config{Policy: provider.Policy{Mode: provider.ModePreferHardware}})
	defer reg.Close() // closes p too
	if err := reg.Register(p); err != nil {
		log.Fatal(err)
	}
	s, err := reg.Signer(context.Background(), keyURI)
	if err != nil {
		log.Fatal(err)
	}
	pv, _ := provider.ProvenanceOf(s)
	fmt.Println(pv.Algorithm, "held by", pv.Provider, pv.Kind, "token", pv.Token == tok.Label)
	ex, _ := reg.Explain("aes128-gcm")
	fmt.Println("aes128-gcm:", ex.Chosen, "-", ex.Reason)
	// Output:
	// ecdsa-p256-sha256 held by pkcs11 hardware token true
	// aes128-gcm: pkcs11 - only eligible provider
}
