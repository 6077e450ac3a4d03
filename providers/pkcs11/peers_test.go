//go:build cgo && !nopkcs11

package pkcs11

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsm"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// peerTokens opens unit0 and unit1 as peers, with the same P-256 key
// "host" imported into both, and returns the key's signer (found by
// label alone: the peers' copies are not a second match).
func peerTokens(t *testing.T, cfg Config, tokens []*uri.URI) (*Provider, crypto.Signer, *ecdsa.PrivateKey) {
	t.Helper()
	t1 := softhsm.NewToken(t, softhsm.WithLabel("unit0"))
	softhsm.NewToken(t, softhsm.WithLabel("unit1"))
	cfg.ModulePath, cfg.PINSource, cfg.HealthInterval = t1.Module, t1.PINFile, -1
	cfg.Tokens = tokens
	p, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ctx := context.Background()
	for _, l := range []string{"unit0", "unit1"} {
		if _, err := p.Import(ctx, "pkcs11:token="+l+";object=host", key); err != nil {
			t.Fatal(err)
		}
	}
	s, err := p.Signer(ctx, "pkcs11:object=host")
	if err != nil {
		t.Fatal(err)
	}
	return p, s, key
}

func peerConfig() (Config, []*uri.URI) {
	return Config{Peers: map[string][]string{"unit0": {"unit1"}}}, []*uri.URI{{Token: "unit0"}, {Token: "unit1"}}
}

// signVerified signs and checks the signature against want.
func signVerified(t *testing.T, s crypto.Signer, want *ecdsa.PublicKey) (string, error) {
	t.Helper()
	d := sha256.Sum256([]byte(time.Now().String()))
	sig, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
	if err != nil {
		return "", err
	}
	if !ecdsa.VerifyASN1(want, d[:], sig) {
		t.Fatal("a signature by another key")
	}
	pv, _ := provider.ProvenanceOf(s)
	return pv.Token, nil
}

// TestPeerSigning: one key on two peer tokens signs on both, in turn
// when neither is busy, and at once when signatures overlap.
func TestPeerSigning(t *testing.T) {
	cfg, toks := peerConfig()
	f := &pkcs11faults.Injector{}
	cfg.Faults = f
	_, s, key := peerTokens(t, cfg, toks)
	seen := map[string]int{}
	for range 10 {
		tok, err := signVerified(t, s, &key.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		seen[tok]++
	}
	if seen["unit0"] != 5 || seen["unit1"] != 5 {
		t.Errorf("ten signatures went %v, want five on each token", seen)
	}
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Sign"}, Delay: 5 * time.Millisecond})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := signVerified(t, s, &key.PublicKey); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if pv, _ := provider.ProvenanceOf(s); !strings.Contains(pv.Detail, "2 tokens") {
		t.Errorf("provenance %v does not say the key signs on 2 tokens", pv)
	}
}

// TestPeerLost: a peer that fails is skipped; the signatures go on, on
// the other token, with the same key.
func TestPeerLost(t *testing.T) {
	cfg, toks := peerConfig()
	f := &pkcs11faults.Injector{}
	cfg.Faults = f
	p, s, key := peerTokens(t, cfg, toks)
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"all"}, Code: pkcs11.CKR_DEVICE_REMOVED, Slots: []uint{p.Tokens()[1].SlotID}})
	for range 6 {
		tok, err := signVerified(t, s, &key.PublicKey)
		if err != nil {
			t.Fatalf("a signature with one peer lost: %v", err)
		}
		if tok != "unit0" {
			t.Fatalf("signed on %s, which is gone", tok)
		}
	}
	f.Clear()
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"all"}, Code: pkcs11.CKR_DEVICE_REMOVED})
	if _, err := s.Sign(rand.Reader, make([]byte, 32), crypto.SHA256); err == nil || !strings.Contains(err.Error(), "no software fallback") {
		t.Errorf("both tokens lost: %v, want the key to fail closed", err)
	}
}

// TestPeerWrongKey: a peer holding a different key under the name never
// signs: its turns go to the token with the right key, and with that one
// lost the key fails closed rather than sign with the other.
func TestPeerWrongKey(t *testing.T) {
	t1 := softhsm.NewToken(t, softhsm.WithLabel("unit0"))
	softhsm.NewToken(t, softhsm.WithLabel("unit1"))
	f := &pkcs11faults.Injector{}
	cfg, toks := peerConfig()
	cfg.ModulePath, cfg.PINSource, cfg.HealthInterval, cfg.Tokens, cfg.Faults = t1.Module, t1.PINFile, -1, toks, f
	p, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	right, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if _, err := p.Import(ctx, "pkcs11:token=unit0;object=host", right); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Import(ctx, "pkcs11:token=unit1;object=host", other); err != nil {
		t.Fatal(err)
	}
	s, err := p.Signer(ctx, "pkcs11:object=host")
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if _, err := signVerified(t, s, &right.PublicKey); err != nil { // fails the test on a signature by other
			t.Fatal(err)
		}
	}
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"all"}, Code: pkcs11.CKR_DEVICE_REMOVED, Slots: []uint{p.Tokens()[0].SlotID}})
	if _, err := s.Sign(rand.Reader, make([]byte, 32), crypto.SHA256); err == nil {
		t.Error("signed with the right key's token gone and only a different key left")
	}
}

// TestPeerURI: peer-token in a token URI makes the same group as
// Config.Peers, and a peer that is not among the tokens is an error.
func TestPeerURI(t *testing.T) {
	_, s, key := peerTokens(t, Config{}, []*uri.URI{uri.MustParse("pkcs11:token=unit0?peer-token=unit1"), {Token: "unit1"}})
	seen := map[string]bool{}
	for range 4 {
		tok, err := signVerified(t, s, &key.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		seen[tok] = true
	}
	if !seen["unit0"] || !seen["unit1"] {
		t.Errorf("signed on %v, want both peers", seen)
	}
	t1 := softhsm.NewToken(t, softhsm.WithLabel("lonely"))
	_, err := Open(Config{ModulePath: t1.Module, PINSource: t1.PINFile, HealthInterval: -1,
		Tokens: []*uri.URI{uri.MustParse("pkcs11:token=lonely?peer-token=nowhere")}})
	if err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("a peer that is not there: %v", err)
	}
}
