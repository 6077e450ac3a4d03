//go:build cgo && !nopkcs11

package pkcs11_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11"
)

// Example_tlsServer shows another Go server using offload: its TLS
// certificate key lives in a PKCS #11 token and is reached through the
// registry by a pkcs11: URI. (The token here is a throwaway SoftHSM one;
// in production the URI names the HSM and its pin-source.)
func Example_tlsServer() {
	tok, cleanup, err := softhsmtest.NewTokenMain("example")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	keyURI := tok.URI("web")

	// The registry holds the providers; the PKCS #11 one serves the key.
	p, err := pkcs11.OpenURI(keyURI, pkcs11.Config{})
	if err != nil {
		log.Fatal(err)
	}
	reg := provider.New(provider.Config{})
	defer reg.Close()
	if err := reg.Register(p); err != nil {
		log.Fatal(err)
	}
	// Once, at setup: a key pair on the token (see also `offload keys generate`).
	if _, err := p.Generate(context.Background(), keyURI, pkcs11.ECDSAP256); err != nil {
		log.Fatal(err)
	}

	key, err := reg.Signer(context.Background(), keyURI) // a crypto.Signer
	if err != nil {
		log.Fatal(err)
	}
	cert, err := selfSigned(key)
	if err != nil {
		log.Fatal(err)
	}
	addr, stop, err := serveEcho(cert, key, &tls.Config{MinVersion: tls.VersionTLS13})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	roots := x509.NewCertPool()
	roots.AddCert(cert)
	reply, st, err := dialEcho(addr, roots, &tls.Config{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply)
	fmt.Println("TLS 1.3:", st.Version == tls.VersionTLS13)
	fmt.Println("key type:", pkcs11.ECDSAP256)
	// Output:
	// echo: hello
	// TLS 1.3: true
	// key type: ecdsa-p256
}
