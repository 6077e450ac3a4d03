//go:build cgo && !nopkcs11

package pkcs11_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/test/hostile/harness"
)

// handshakeKex is the key exchange every benchmarked handshake uses.
const handshakeKex = "curve25519-sha256"

// hostKeyCase is one host key type, stored both in a file and in a token.
type hostKeyCase struct {
	name string
	alg  string // SSH host key algorithm
	gen  func() (crypto.Signer, error)
}

var hostKeyCases = []hostKeyCase{
	{"ed25519", ssh.KeyAlgoED25519, func() (crypto.Signer, error) {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}},
	{"ecdsa-p256", ssh.KeyAlgoECDSA256, func() (crypto.Signer, error) {
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}},
}

// BenchmarkHandshake runs full SSH handshakes (TCP connect, curve25519
// key exchange, host key signature, public key login) against an
// in-process server whose host key is the same key once in a file and
// once in a SoftHSM token, both opened through the registry as
// `offload sshd` opens HostKey entries. The difference between the file
// and token rows is what the token costs a login (issue 4: at most 1 ms).
func BenchmarkHandshake(b *testing.B) {
	for _, kc := range hostKeyCases {
		reg, keys := hostKeys(b, kc)
		for _, k := range keys {
			b.Run(kc.name+"/"+k.where, func(b *testing.B) {
				runHandshakes(b, reg, k, kc.alg)
			})
		}
	}
}

// BenchmarkHostKeySign is the host key signature alone, for the same keys:
// the part of a handshake the token changes.
func BenchmarkHostKeySign(b *testing.B) {
	for _, kc := range hostKeyCases {
		_, keys := hostKeys(b, kc)
		opts := crypto.SignerOpts(crypto.SHA256)
		if kc.name == "ed25519" {
			opts = crypto.Hash(0)
		}
		digest := make([]byte, 32)
		for _, k := range keys {
			b.Run(kc.name+"/"+k.where, func(b *testing.B) {
				for b.Loop() {
					if _, err := k.signer.Sign(rand.Reader, digest, opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// hostKey is one host key as the server gets it.
type hostKey struct {
	where  string // "file" or "softhsm"
	signer crypto.Signer
	calls  *pkcs11faults.Injector // counts the token's calls; nil for a file
}

// hostKeys makes a key of kc's type, stores it in a file and in a new
// token, and opens both through a registry.
func hostKeys(b *testing.B, kc hostKeyCase) (*provider.Registry, []hostKey) {
	b.Helper()
	tok := softhsmtest.NewToken(b, "hs-"+kc.name)
	calls := &pkcs11faults.Injector{} // no faults: it only counts
	reg, p := handshakeRegistry(b, tok, calls)
	key, err := kc.gen()
	if err != nil {
		b.Fatal(err)
	}
	file := writeKeyFile(b, key)
	if _, err := p.Import(context.Background(), tok.URI("host"), key); err != nil {
		b.Fatalf("import %s into the token: %v", kc.name, err)
	}
	out := []hostKey{{where: "file"}, {where: "softhsm", calls: calls}}
	for i, k := range []struct{ ref, provider string }{{file, "software"}, {tok.URI("host"), p.Name()}} {
		s, prov, err := reg.OpenSigner(context.Background(), k.ref)
		if err != nil {
			b.Fatal(err)
		}
		if prov.Name() != k.provider {
			b.Fatalf("%s host key opened by %s, want %s", out[i].where, prov.Name(), k.provider)
		}
		out[i].signer = s
	}
	return reg, out
}

// handshakeRegistry registers the CPU, PKCS #11 and software providers,
// as `offload sshd` does when a HostKey is a pkcs11: URI; calls counts
// the module calls.
func handshakeRegistry(b *testing.B, tok *softhsmtest.Token, calls *pkcs11faults.Injector) (*provider.Registry, *pkcs11.Provider) {
	b.Helper()
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{Faults: calls})
	if err != nil {
		b.Fatal(err)
	}
	reg := provider.New(provider.Config{})
	b.Cleanup(func() { reg.Close() })
	for _, pr := range []provider.Provider{cpu.New(cpu.Detect()), p, software.New()} {
		if err := reg.Register(pr); err != nil {
			b.Fatal(err)
		}
	}
	return reg, p
}

// writeKeyFile stores key as an OpenSSH private key file.
func writeKeyFile(b *testing.B, key crypto.Signer) string {
	b.Helper()
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "host_key")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// runHandshakes serves with k as the only host key and times one
// complete handshake and login per iteration. For a token key it also
// reports the PKCS #11 calls per handshake (C_SignInit and C_Sign: 2).
func runHandshakes(b *testing.B, reg *provider.Registry, k hostKey, alg string) {
	srv := harness.Start(b, func(c *sshd.Config) {
		c.Registry = reg
		c.HostKeys = []crypto.Signer{k.signer}
	})
	pub, err := ssh.NewSignerFromSigner(k.signer)
	if err != nil {
		b.Fatal(err)
	}
	cfg := srv.ClientConfig()
	cfg.HostKeyCallback = ssh.FixedHostKey(pub.PublicKey())
	cfg.HostKeyAlgorithms = []string{alg}
	cfg.KeyExchanges = []string{handshakeKex}
	handshakeOnce(b, srv.Addr, cfg) // warm the session pool and caches
	before := k.calls.Calls("all")
	b.ResetTimer()
	for b.Loop() {
		handshakeOnce(b, srv.Addr, cfg)
	}
	if k.calls != nil {
		b.ReportMetric(float64(k.calls.Calls("all")-before)/float64(b.N), "p11calls/op")
	}
}

func handshakeOnce(b *testing.B, addr string, cfg *ssh.ClientConfig) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	c, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	if err != nil {
		nc.Close()
		b.Fatal(err)
	}
	ssh.NewClient(c, chans, reqs).Close()
}

// BenchmarkHandshakeUnits is handshakes per second from 16 concurrent
// clients when the host key (ECDSA P-256) is on one token, or the same
// key on two peer tokens that share the signing (pkcs11.Config.Peers),
// each token serving sessions signatures at once — a unit of a device —
// with latency per C_Sign added by the fault injector (a network HSM).
func BenchmarkHandshakeUnits(b *testing.B) {
	for _, delay := range []time.Duration{0, 2 * time.Millisecond} {
		for _, sessions := range []int{1, 8} {
			for _, tokens := range []int{1, 2} {
				b.Run(fmt.Sprintf("delay=%v/sessions=%d/tokens=%d", delay, sessions, tokens), func(b *testing.B) {
					reg, signer, faults := unitKey(b, tokens, sessions)
					if delay > 0 {
						if _, err := faults.Inject(pkcs11faults.Fault{Calls: []string{"Sign"}, Delay: delay}); err != nil {
							b.Fatal(err)
						}
					}
					parallelHandshakes(b, reg, signer)
				})
			}
		}
	}
}

// unitKey makes tokens fresh tokens with pools of sessions, imports one
// P-256 key into each, and opens it through a registry, the tokens peers.
func unitKey(b *testing.B, tokens, sessions int) (*provider.Registry, crypto.Signer, *pkcs11faults.Injector) {
	b.Helper()
	var sels []*uri.URI
	var first *softhsmtest.Token
	for i := range tokens {
		tok := softhsmtest.NewToken(b, fmt.Sprintf("hsu%d", i))
		if first == nil {
			first = tok
		}
		sels = append(sels, &uri.URI{Token: tok.Label})
	}
	faults := &pkcs11faults.Injector{}
	cfg := pkcs11.Config{ModulePath: first.Module, PINSource: first.PINFile, Tokens: sels, MaxSessions: sessions,
		HealthInterval: -1, Faults: faults}
	if tokens > 1 {
		cfg.Peers = map[string][]string{sels[0].Token: {sels[1].Token}}
	}
	p, err := pkcs11.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	reg := provider.New(provider.Config{})
	b.Cleanup(func() { reg.Close() })
	for _, pr := range []provider.Provider{cpu.New(cpu.Detect()), p, software.New()} {
		if err := reg.Register(pr); err != nil {
			b.Fatal(err)
		}
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, sel := range sels {
		if _, err := p.Import(context.Background(), "pkcs11:token="+sel.Token+";object=host", key); err != nil {
			b.Fatal(err)
		}
	}
	s, _, err := reg.OpenSigner(context.Background(), "pkcs11:object=host")
	if err != nil {
		b.Fatal(err)
	}
	return reg, s, faults
}

// parallelHandshakes runs b.N handshakes from 16 goroutines and reports
// handshakes per second.
func parallelHandshakes(b *testing.B, reg *provider.Registry, signer crypto.Signer) {
	srv := harness.Start(b, func(c *sshd.Config) {
		c.Registry = reg
		c.HostKeys = []crypto.Signer{signer}
		c.MaxStartups = -1 // 16 clients at once are all served
	})
	pub, err := ssh.NewSignerFromSigner(signer)
	if err != nil {
		b.Fatal(err)
	}
	cfg := srv.ClientConfig()
	cfg.HostKeyCallback = ssh.FixedHostKey(pub.PublicKey())
	cfg.HostKeyAlgorithms = []string{ssh.KeyAlgoECDSA256}
	cfg.KeyExchanges = []string{handshakeKex}
	handshakeOnce(b, srv.Addr, cfg)
	b.SetParallelism(8) // 16 clients on 2 cores
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			handshakeOnce(b, srv.Addr, cfg)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "handshakes/s")
}
