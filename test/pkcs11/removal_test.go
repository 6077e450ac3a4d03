//go:build cgo && !nopkcs11

package pkcs11_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/software"
)

func waitHealth(t *testing.T, p *pkcs11.Provider, up bool) {
	t.Helper()
	if !testenv.WaitUntil(t, func() bool { return p.Health()[0].Up == up }) {
		t.Fatalf("token did not become up=%v before the deadline: %+v", up, p.Health()[0])
	}
}

// TestTokenRemovedAndRecreated removes a real SoftHSM token under a
// running process and creates it again: the health probe notices both;
// the token key fails closed while it is gone; an AEAD in use carries on
// and new bulk work falls open to software; once an administrator restores
// the key the same signer works again, and a different key under the same
// name is refused.
func TestTokenRemovedAndRecreated(t *testing.T) {
	tok := softhsmtest.NewToken(t, "removable")
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tok.Import(t, key, "host")

	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{HealthInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg := provider.New(provider.Config{Policy: provider.Policy{Mode: provider.ModePreferHardware}})
	for _, q := range []provider.Provider{p, software.New()} {
		if err := reg.Register(q); err != nil {
			t.Fatal(err)
		}
	}
	defer reg.Close()
	ctx := context.Background()
	s, err := reg.Signer(ctx, tok.URI("host"))
	if err != nil {
		t.Fatal(err)
	}
	sign := func() error {
		d := sha256.Sum256([]byte("removal"))
		sig, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
		if err == nil && !ecdsa.VerifyASN1(&key.PublicKey, d[:], sig) {
			return errors.New("signature does not verify under the original key")
		}
		return err
	}
	if err := sign(); err != nil {
		t.Fatal(err)
	}
	aesKey := bytes.Repeat([]byte{3}, 16)
	if ka, err := reg.KeyAgreement("ecdh-p256"); err != nil {
		t.Fatal(err)
	} else if pv, _ := provider.ProvenanceOf(ka); pv.Token != tok.Label {
		t.Fatalf("prefer-hardware should put ECDH on the token, got %+v", pv)
	} else {
		provider.Release(ka)
	}
	inUse, err := reg.AEAD("aes128-gcm", aesKey)
	if err != nil {
		t.Fatal(err)
	}
	if pv, _ := provider.ProvenanceOf(inUse); pv.Token != tok.Label || pv.Fallback {
		t.Fatalf("prefer-hardware should put the AEAD on the token, got %+v", pv)
	}
	defer provider.Release(inUse)

	tok.Delete(t)
	waitHealth(t, p, false)
	if err := sign(); err == nil || !strings.Contains(err.Error(), "no software fallback") {
		t.Errorf("signing with the token gone: %v, want a fail-closed error", err)
	}
	block, _ := aes.NewCipher(aesKey)
	ref, _ := cipher.NewGCM(block)
	nonce := make([]byte, 12)
	if got, want := inUse.Seal(nil, nonce, []byte("still here"), nil), ref.Seal(nil, nonce, []byte("still here"), nil); !bytes.Equal(got, want) {
		t.Errorf("the AEAD in use changed its output when the token went away")
	}
	fresh, err := reg.AEAD("aes128-gcm", aesKey)
	if err != nil {
		t.Fatalf("new AEAD with the token gone: %v, want software to serve", err)
	}
	if pv, _ := provider.ProvenanceOf(fresh); pv.Token != "" || !pv.Fallback || pv.Kind == provider.KindHardware {
		t.Errorf("new AEAD with the token gone: provenance %+v, want a fallback in this process", pv)
	}
	provider.Release(fresh)
	ka, err := reg.KeyAgreement("ecdh-p256")
	if err != nil {
		t.Fatalf("key agreement with the token gone: %v, want software to serve", err)
	}
	if pv, _ := provider.ProvenanceOf(ka); pv.Token != "" || !pv.Fallback {
		t.Errorf("key agreement with the token gone: provenance %+v, want a fallback in this process", pv)
	}

	tok.Recreate(t)
	tok.Import(t, key, "host")
	waitHealth(t, p, true)
	if err := sign(); err != nil {
		t.Errorf("after the token and key came back: %v", err)
	}
	if h := p.Health()[0]; h.Recoveries == 0 {
		t.Errorf("Health = %+v, want a recovery counted", h)
	}

	// The same name, another key: refused, never used.
	tok.Delete(t)
	waitHealth(t, p, false)
	tok.Recreate(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tok.Import(t, other, "host")
	waitHealth(t, p, true)
	if err := sign(); err == nil || !strings.Contains(err.Error(), "different key") {
		t.Errorf("signing after the key was replaced: %v, want a refusal", err)
	}
}

// TestTokenBackOnlyOnceSetUp: a token made again in two steps (the token,
// then its user PIN, as softhsm2-util and pkcs11-tool do) is not up
// between them. Before, the health probe declared it up as soon as it was
// listed, and the next use failed to log in (CKR_USER_PIN_NOT_INITIALIZED)
// and fell back to software: test/tokenfaults' TestBulkPreferHardware
// failed so when the window was wide (five test suites at once).
func TestTokenBackOnlyOnceSetUp(t *testing.T) {
	tok := softhsmtest.NewToken(t, "halfset")
	log := &sshtest.LogBuffer{}
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{HealthInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tok.Delete(t)
	waitHealth(t, p, false)

	tok.InitTokenOnly(t)
	const settingUp = "its user PIN is not initialized yet"
	// the probe's lines say why the token stays down once it sees it
	testenv.WaitUntil(t, func() bool { return p.Health()[0].Up || strings.Contains(log.String(), settingUp) })
	if h := p.Health()[0]; h.Up || !strings.Contains(log.String(), settingUp) {
		t.Fatalf("a token without its user PIN: health %+v, want down, the log saying %q:\n%s", h, settingUp, log)
	}

	tok.InitUserPIN(t)
	waitHealth(t, p, true)
	if _, err := p.Generate(context.Background(), tok.URI("k"), pkcs11.ECDSAP256); err != nil {
		t.Fatalf("a key made on the token once set up (a login): %v\nthe provider's log:\n%s", err, log)
	}
}
