//go:build cgo && !nopkcs11

package pkcs11_test

import (
	"bufio"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11"
)

// tokenRegistry opens a provider on tok and registers it.
func tokenRegistry(t testing.TB, tok *softhsmtest.Token) (*provider.Registry, *pkcs11.Provider) {
	t.Helper()
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	reg := provider.New(provider.Config{})
	if err := reg.Register(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg, p
}

// selfSigned makes a certificate for 127.0.0.1 signed by the token key.
func selfSigned(key crypto.Signer) (*x509.Certificate, error) {
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "offload test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CreateCertificate with the token key: %w", err)
	}
	return x509.ParseCertificate(der)
}

// serveEcho runs a TLS echo server on 127.0.0.1 and returns its address
// and a function that stops it.
func serveEcho(cert *x509.Certificate, key crypto.Signer, cfg *tls.Config) (string, func(), error) {
	cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		return "", nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					fmt.Fprintf(c, "echo: %s", line)
				}
			}()
		}
	}()
	return ln.Addr().String(), func() { ln.Close() }, nil
}

func dialEcho(addr string, roots *x509.CertPool, cfg *tls.Config) (string, *tls.ConnectionState, error) {
	cfg.RootCAs = roots
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", nil, err
	}
	defer c.Close()
	fmt.Fprintln(c, "hello")
	line, err := bufio.NewReader(c).ReadString('\n')
	st := c.ConnectionState()
	return strings.TrimSpace(line), &st, err
}

// TestTLSServerKeyInToken: a crypto/tls server whose certificate key
// lives in SoftHSM, opened through the registry by its pkcs11: URI. The
// client verifies the handshake signature, so the token did the signing.
func TestTLSServerKeyInToken(t *testing.T) {
	tok := softhsmtest.NewToken(t, "tls")
	reg, p := tokenRegistry(t, tok)
	ctx := context.Background()
	cases := []struct {
		kt      pkcs11.KeyType
		version uint16
	}{
		{pkcs11.ECDSAP256, tls.VersionTLS13},
		{pkcs11.ECDSAP384, tls.VersionTLS12},
		{pkcs11.Ed25519, tls.VersionTLS13},
		{pkcs11.RSA2048, tls.VersionTLS13}, // RSA-PSS
		{pkcs11.RSA2048, tls.VersionTLS12}, // ECDHE-RSA, PSS or PKCS #1 v1.5 by negotiation
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s-tls1%d", c.kt, c.version-tls.VersionTLS10)
		t.Run(name, func(t *testing.T) {
			ref := tok.URI("tls-" + name)
			if _, err := p.Generate(ctx, ref, c.kt); err != nil {
				t.Fatal(err)
			}
			key, err := reg.Signer(ctx, ref)
			if err != nil {
				t.Fatalf("registry Signer(%s): %v", ref, err)
			}
			cert, err := selfSigned(key)
			if err != nil {
				t.Fatal(err)
			}
			addr, stop, err := serveEcho(cert, key, &tls.Config{MinVersion: c.version, MaxVersion: c.version})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			roots := x509.NewCertPool()
			roots.AddCert(cert)
			got, st, err := dialEcho(addr, roots, &tls.Config{})
			if err != nil {
				t.Fatalf("TLS round trip: %v", err)
			}
			if got != "echo: hello" || st.Version != c.version {
				t.Errorf("got %q over version %x", got, st.Version)
			}
		})
	}
}
