//go:build cgo && !nopkcs11

package pkcs11

import (
	"bytes"
	"context"
	"crypto"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsm"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/provider/providertest"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// open opens a provider on a fresh token and closes it when the test ends.
func open(t *testing.T, label string, cfg Config) (*Provider, *softhsm.Token) {
	t.Helper()
	tok := softhsm.NewToken(t, softhsm.WithLabel(label))
	if cfg.HealthInterval == 0 {
		cfg.HealthInterval = -1
	}
	p, err := OpenURI(tok.TokenURI(), cfg)
	if err != nil {
		t.Fatalf("OpenURI: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p, tok
}

func TestOpenCapabilities(t *testing.T) {
	p, tok := open(t, "caps", Config{})
	want := []string{"aes128-gcm", "aes256-gcm", "ed25519", "ecdsa-p256-sha256", "ecdsa-p384-sha384",
		"rsa-pkcs1v15-sha256", "rsa-pss-sha256", "ecdh-p256", "ecdh-p384"}
	for _, alg := range want {
		if !provider.Supports(p, alg, 0) {
			t.Errorf("SoftHSM token: capability %s missing; have %v", alg, p.Capabilities())
		}
	}
	if !provider.Supports(p, "ed25519", provider.OpSign|provider.OpGenerate) {
		t.Errorf("ed25519 should list sign and generate")
	}
	if provider.Supports(p, "chacha20-poly1305", 0) {
		t.Errorf("chacha20-poly1305 listed although no PKCS #11 mechanism maps to it")
	}
	// SoftHSM sets no CKF_HW: no capability is flagged hardware.
	for _, c := range p.Capabilities() {
		if c.Flags&provider.FlagHardware != 0 {
			t.Errorf("%s flagged hardware on SoftHSM", c.Algorithm)
		}
	}
	ms := p.Mechanisms()
	if len(ms) == 0 || ms[0].Token != tok.Label || ms[0].Mechanism == "" {
		t.Errorf("Mechanisms() = %+v", ms)
	}
	if raw := p.RawMechanisms()[tok.Label]; len(raw) < 10 {
		t.Errorf("RawMechanisms lists %d mechanisms", len(raw))
	}
	ts := p.Tokens()
	if len(ts) != 1 || ts[0].Label != tok.Label || ts[0].Serial == "" {
		t.Errorf("Tokens() = %+v", ts)
	}
	if id := p.Identity(); !strings.Contains(id, ts[0].Serial) || !strings.Contains(id, "softhsm") {
		t.Errorf("Identity() = %q: want module and serial", id)
	}
	h := p.Health()
	if len(h) != 1 || !h[0].Up || h[0].Max != DefaultMaxSessions {
		t.Errorf("Health() = %+v", h)
	}
	var desc bytes.Buffer
	if err := p.Describe(&desc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`token "caps"`, "up; sessions", "aes128-gcm", "CKM_AES_GCM", "ed25519", "CKM_EDDSA", "sign,generate"} {
		if !strings.Contains(desc.String(), want) {
			t.Errorf("Describe lacks %q:\n%s", want, desc.String())
		}
	}
	t.Logf("Describe:\n%s", desc.String())
}

// TestConformance runs the project's conformance suite: every AEAD, every
// signature algorithm through generated session keys, and ECDH.
func TestConformance(t *testing.T) {
	// The suite makes AEADs without releasing them: a pool big enough for all.
	p, _ := open(t, "conformance", Config{MaxSessions: 256})
	providertest.TestProvider(t, p)
}

// TestTokenKeys generates, opens, lists and deletes token keys of every
// type and runs the signer suite on keys opened by URI.
func TestTokenKeys(t *testing.T) {
	p, tok := open(t, "tokenkeys", Config{})
	ctx := context.Background()
	algs := map[KeyType][]string{
		Ed25519:   {"ed25519"},
		ECDSAP256: {"ecdsa-p256-sha256"},
		ECDSAP384: {"ecdsa-p384-sha384"},
		RSA2048:   {"rsa-pkcs1v15-sha256", "rsa-pkcs1v15-sha512", "rsa-pss-sha256", "rsa-pss-sha512"},
	}
	for _, kt := range []KeyType{Ed25519, ECDSAP256, ECDSAP384, RSA2048} {
		t.Run(string(kt), func(t *testing.T) {
			ref := tok.URI("key-" + string(kt))
			u := ref
			s, err := p.Generate(ctx, u, kt)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if got, _ := KeyTypeOf(s.Public()); got != kt {
				t.Errorf("generated key is %s, want %s", got, kt)
			}
			if _, err := p.Generate(ctx, u, kt); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Errorf("second Generate with the same label: %v, want 'already exists'", err)
			}
			opened, err := p.Signer(ctx, ref)
			if err != nil {
				t.Fatalf("Signer(%s): %v", ref, err)
			}
			if !samePublic(opened.Public(), s.Public()) {
				t.Fatalf("opened key differs from generated key")
			}
			for _, name := range algs[kt] {
				t.Run(name, func(t *testing.T) { providertest.TestSigner(t, opened, provider.MustLookup(name)) })
			}
			keys, err := p.List(ctx, u)
			if err != nil || len(keys) != 1 || keys[0].Type != kt || !keys[0].Sensitive || keys[0].Extractable {
				t.Fatalf("List = %+v, %v", keys, err)
			}
			if reopened, err := p.Signer(ctx, keys[0].URI); err != nil || !samePublic(reopened.Public(), s.Public()) {
				t.Errorf("Signer(listed URI %s): %v", keys[0].URI, err)
			}
			n, err := p.Delete(ctx, u)
			if err != nil || n != 2 {
				t.Fatalf("Delete = %d, %v; want 2 objects", n, err)
			}
			if _, err := p.Signer(ctx, ref); !errors.Is(err, ErrNotFound) {
				t.Errorf("Signer after Delete: %v, want ErrNotFound", err)
			}
			if _, err := opened.Sign(rand.Reader, make([]byte, 32), crypto.SHA256); err == nil {
				t.Errorf("signing with a deleted key succeeded")
			}
		})
	}
}

// TestImport stores software keys on the token and checks that token
// signatures verify under the original public keys.
func TestImport(t *testing.T) {
	p, tok := open(t, "import", Config{})
	ctx := context.Background()
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	keys := []struct {
		name string
		key  crypto.Signer
		alg  string
	}{{"ed", edKey, "ed25519"}, {"p256", p256, "ecdsa-p256-sha256"}, {"p384", p384, "ecdsa-p384-sha384"},
		{"rsa", rsaKey, "rsa-pss-sha256"}}
	for _, k := range keys {
		t.Run(k.name, func(t *testing.T) {
			u := tok.URI("imported-" + k.name)
			s, err := p.Import(ctx, u, k.key)
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if !samePublic(s.Public(), k.key.Public()) {
				t.Fatalf("imported key's public key differs")
			}
			providertest.TestSigner(t, s, provider.MustLookup(k.alg))
			infos, err := p.List(ctx, u)
			if err != nil || len(infos) != 1 || !infos[0].Sensitive || infos[0].Extractable {
				t.Errorf("imported key must be sensitive and not extractable: %+v, %v", infos, err)
			}
		})
	}
	if _, err := p.Import(ctx, tok.URI("dsa"), struct{}{}); err == nil {
		t.Errorf("Import of an unsupported key type succeeded")
	}
}

func TestBadInput(t *testing.T) {
	p, tok := open(t, "badinput", Config{})
	ctx := context.Background()

	t.Run("MissingModule", func(t *testing.T) {
		_, err := Open(Config{ModulePath: "/nonexistent/libnothing.so"})
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/libnothing.so") {
			t.Errorf("err = %v, want it to name the module", err)
		}
		_, err = Open(Config{ModulePath: "no-such-module-name"})
		if err == nil || !strings.Contains(err.Error(), `"no-such-module-name" not found`) {
			t.Errorf("module-name: err = %v", err)
		}
	})
	t.Run("TokenAbsent", func(t *testing.T) {
		ref := strings.Replace(tok.TokenURI(), "token=badinput", "token=nosuchtoken", 1)
		_, err := OpenURI(ref, Config{HealthInterval: -1})
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nosuchtoken") || !strings.Contains(err.Error(), "badinput") {
			t.Errorf("err = %v, want ErrNotFound naming the token asked for and those present", err)
		}
	})
	t.Run("ObjectAbsent", func(t *testing.T) {
		_, err := p.Signer(ctx, tok.URI("nosuchkey"))
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nosuchkey") {
			t.Errorf("err = %v, want ErrNotFound naming the key", err)
		}
	})
	t.Run("Ambiguous", func(t *testing.T) {
		for _, id := range []string{"%01", "%02"} {
			u := strings.Replace(tok.URI("twin"), "object=twin", "object=twin;id="+id, 1)
			if _, err := p.Generate(ctx, u, ECDSAP256); err != nil {
				t.Fatal(err)
			}
		}
		_, err := p.Signer(ctx, tok.URI("twin"))
		if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "twin") || !strings.Contains(err.Error(), "%01") {
			t.Errorf("err = %v, want ErrAmbiguous naming the candidates", err)
		}
		one := strings.Replace(tok.URI("twin"), "object=twin", "object=twin;id=%02", 1)
		if _, err := p.Signer(ctx, one); err != nil {
			t.Errorf("Signer(%s): %v", one, err)
		}
	})
	t.Run("Unsupported", func(t *testing.T) {
		if _, err := p.NewAEAD(provider.MustLookup("chacha20-poly1305"), make([]byte, 32)); err == nil {
			t.Errorf("chacha20-poly1305 AEAD accepted")
		}
		if _, err := p.NewKeyAgreement(provider.MustLookup("x25519")); err == nil {
			t.Errorf("x25519 key agreement accepted")
		}
		if _, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), make([]byte, 15)); err == nil {
			t.Errorf("15-byte AES key accepted")
		}
		s, err := p.GenerateSigner(ctx, provider.MustLookup("ed25519"), "")
		if err != nil {
			t.Fatal(err)
		}
		defer provider.Release(s)
		if _, err := s.Sign(rand.Reader, make([]byte, 32), crypto.SHA256); err == nil {
			t.Errorf("Ed25519ph (hashed) accepted")
		}
	})
	t.Run("MalformedURI", func(t *testing.T) {
		for _, ref := range []string{"pkcs11:token=a;token=b", "pkcs11:id=%zz", "pkcs11:type=secret", "pkcs11:bogus=1"} {
			if _, err := p.Signer(ctx, ref); err == nil {
				t.Errorf("Signer(%q) accepted a malformed URI", ref)
			}
		}
	})
	t.Run("EmptyAndNil", func(t *testing.T) {
		if _, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), nil); err == nil {
			t.Errorf("nil AES key accepted")
		}
		for _, ref := range []string{"", "pkcs11:", "file:/etc/passwd", "pkcs11:token=badinput?frobnicate=1"} {
			if _, err := p.Signer(ctx, ref); err == nil {
				t.Errorf("Signer(%q) accepted", ref)
			}
			if _, err := p.Generate(ctx, ref, ECDSAP256); err == nil {
				t.Errorf("Generate(%q) accepted", ref)
			}
			if _, err := p.Delete(ctx, ref); err == nil {
				t.Errorf("Delete(%q) accepted", ref)
			}
		}
		if _, err := p.Import(ctx, tok.URI("nilkey"), nil); err == nil {
			t.Errorf("Import of a nil key accepted")
		}
		ka, err := p.NewKeyAgreement(provider.MustLookup("ecdh-p256"))
		if err != nil {
			t.Fatal(err)
		}
		defer provider.Release(ka)
		for _, peer := range [][]byte{nil, {}, {4}, make([]byte, 65)} {
			if _, err := ka.SharedSecret(peer); err == nil {
				t.Errorf("SharedSecret(%x) accepted", peer)
			}
		}
	})
	t.Run("ListNoSuchToken", func(t *testing.T) {
		keys, err := p.List(ctx, "pkcs11:token=misspelt")
		if !errors.Is(err, ErrNotFound) || errors.Is(err, provider.ErrUnavailable) || len(keys) != 0 {
			t.Errorf("List of a token that is not there: %v, %v; want ErrNotFound", keys, err)
		}
	})
	t.Run("NilProvider", func(t *testing.T) {
		var notOpened *Provider // OpenURI's result beside an unchecked error
		if err := notOpened.Close(); err != nil {
			t.Errorf("Close of a nil provider: %v", err)
		}
		if err := provider.New(provider.Config{}).Register(notOpened); err == nil {
			t.Error("Register of a nil provider accepted")
		}
	})
	t.Run("NoKeyNamed", func(t *testing.T) {
		if _, err := p.Signer(ctx, tok.TokenURI()); err == nil || !strings.Contains(err.Error(), "names no key") {
			t.Errorf("err = %v", err)
		}
		// The bare URI "pkcs11:" is quoted, not read as a second prefix.
		for _, ref := range []string{"pkcs11:", "pkcs11:?pin-source=/nonexistent"} {
			if _, err := p.Signer(ctx, ref); err == nil || strings.Contains(err.Error(), "pkcs11: pkcs11:") {
				t.Errorf("Signer(%q): %v", ref, err)
			}
			if _, err := p.Generate(ctx, ref, Ed25519); err == nil || strings.Contains(err.Error(), "pkcs11: pkcs11:") {
				t.Errorf("Generate(%q): %v", ref, err)
			}
			if _, err := p.Delete(ctx, ref); err == nil || strings.Contains(err.Error(), "pkcs11: pkcs11:") {
				t.Errorf("Delete(%q): %v", ref, err)
			}
		}
	})
	t.Run("OtherModule", func(t *testing.T) {
		if p.CanOpen("pkcs11:object=x?module-path=/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so") {
			t.Errorf("CanOpen accepted a key of another module")
		}
		if p.CanOpen("/etc/ssh/ssh_host_ed25519_key") || !p.CanOpen(tok.URI("x")) {
			t.Errorf("CanOpen wrong")
		}
	})
}

// TestWrongPIN checks that a refused PIN fails Open with a clear error, is
// sent exactly once, and never appears in the error.
func TestWrongPIN(t *testing.T) {
	tok := softhsm.NewToken(t, softhsm.WithLabel("wrongpin"))
	bad := filepath.Join(t.TempDir(), "badpin")
	const wrong = "not-the-pin-9876"
	if err := os.WriteFile(bad, []byte(wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := strings.Replace(tok.TokenURI(), "pin-source="+escapeForTest(tok.PINFile), "pin-source="+escapeForTest(bad), 1)
	f := &pkcs11faults.Injector{}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err := OpenURI(ref, Config{HealthInterval: -1, Faults: f, Logger: logger})
	if !errors.Is(err, ErrPINRejected) {
		t.Fatalf("err = %v, want ErrPINRejected", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "CKR_PIN_INCORRECT") || !strings.Contains(msg, "wrongpin") || strings.Contains(msg, wrong) {
		t.Errorf("error %q: want CKR_PIN_INCORRECT and the token, without the PIN", msg)
	}
	if n := f.Calls("Login"); n != 1 {
		t.Errorf("Login called %d times, want exactly 1", n)
	}
	if strings.Contains(logs.String(), wrong) || !strings.Contains(logs.String(), "refused the PIN") {
		t.Errorf("logs must report the refusal without the PIN:\n%s", logs.String())
	}
	// The same with the PIN given as pin-value: not in the error either.
	withValue := strings.Replace(ref, "pin-source="+escapeForTest(bad), "pin-value="+wrong, 1)
	if _, err := OpenURI(withValue, Config{HealthInterval: -1}); err == nil || strings.Contains(err.Error(), wrong) {
		t.Errorf("pin-value: err = %v", err)
	}
}

func escapeForTest(path string) string {
	s := (&uri.URI{PINSource: path}).String()
	return strings.TrimPrefix(s, "pkcs11:?pin-source=")
}

func TestAEADSpread(t *testing.T) {
	t1 := softhsm.NewToken(t, softhsm.WithLabel("unit0"))
	t2 := softhsm.NewToken(t, softhsm.WithLabel("unit1"))
	p, err := Open(Config{ModulePath: t1.Module, PINSource: t1.PINFile, HealthInterval: -1,
		Tokens: []*uri.URI{{Token: "unit0"}, {Token: "unit1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_ = t2
	alg := provider.MustLookup("aes128-gcm")
	var aeads []cipher.AEAD
	for i := 0; i < 4; i++ {
		a, err := p.NewAEAD(alg, make([]byte, 16))
		if err != nil {
			t.Fatal(err)
		}
		aeads = append(aeads, a)
	}
	per := map[string]int{}
	for _, a := range aeads {
		per[lanesOf(a)[0].tok.label()]++
	}
	if per["unit0"] != 2 || per["unit1"] != 2 {
		t.Errorf("4 AEADs over 2 tokens went %v, want 2 and 2", per)
	}
	for _, h := range p.Health() {
		if h.InUse != 2 {
			t.Errorf("token %s: %d sessions in use, want 2", h.Token.Label, h.InUse)
		}
	}
	for _, a := range aeads {
		ct := a.Seal(nil, make([]byte, 12), []byte("x"), nil)
		if _, err := a.Open(nil, make([]byte, 12), ct, nil); err != nil {
			t.Errorf("round trip on %s: %v", lanesOf(a)[0].tok.label(), err)
		}
		provider.Release(a)
	}
	for _, h := range p.Health() {
		if h.InUse != 0 {
			t.Errorf("token %s: %d sessions in use after Close, want 0", h.Token.Label, h.InUse)
		}
	}
	// A pin naming one token narrows the provider to it.
	n, err := p.Narrow("pkcs11:token=unit1")
	if err != nil {
		t.Fatal(err)
	}
	a, err := n.(provider.AEADProvider).NewAEAD(alg, make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	if got := lanesOf(a)[0].tok.label(); got != "unit1" {
		t.Errorf("narrowed AEAD on %s, want unit1", got)
	}
	provider.Release(a)
	if !p.Matches("pkcs11:token=unit0") || p.Matches("pkcs11:token=unit7") || !p.Matches("pkcs11") {
		t.Errorf("Matches wrong")
	}
}

// TestPoolBound checks the session pool's bound and wait timeout, and
// that AEADs leave the last session to signatures.
func TestPoolBound(t *testing.T) {
	f := &pkcs11faults.Injector{}
	p, _ := open(t, "pool", Config{MaxSessions: 2, WaitTimeout: 50 * time.Millisecond, Faults: f})
	alg := provider.MustLookup("aes256-gcm")
	a1, err := p.NewAEAD(alg, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.NewAEAD(alg, make([]byte, 32)); !errors.Is(err, ErrPoolExhausted) {
		t.Errorf("second AEAD with a pool of 2: %v, want ErrPoolExhausted (the last session is kept for signing)", err)
	}
	s, err := p.GenerateSigner(context.Background(), provider.MustLookup("ecdsa-p256-sha256"), "")
	if err != nil {
		t.Fatalf("signing key with an AEAD holding a session: %v", err)
	}
	defer provider.Release(s)
	d := sha256.Sum256([]byte("x"))
	// A slow signature holds the last session: a second one waits out
	// WaitTimeout and fails.
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Sign"}, Delay: 300 * time.Millisecond, Times: 1})
	slow := make(chan error, 1)
	go func() { _, err := s.Sign(rand.Reader, d[:], crypto.SHA256); slow <- err }()
	for f.Injected("Sign") == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if _, err := s.Sign(rand.Reader, d[:], crypto.SHA256); !errors.Is(err, ErrPoolExhausted) || time.Since(start) < 50*time.Millisecond {
		t.Errorf("signing while the pool is full: %v after %v, want ErrPoolExhausted after the 50ms wait", err, time.Since(start))
	}
	if err := <-slow; err != nil {
		t.Errorf("slow signature: %v", err)
	}
	provider.Release(a1)
	a2, err := p.NewAEAD(alg, make([]byte, 32))
	if err != nil {
		t.Fatalf("AEAD after the first was released: %v", err)
	}
	provider.Release(a2)
	if h := p.Health()[0]; h.InUse != 0 {
		t.Errorf("%d sessions in use after every AEAD and signature ended", h.InUse)
	}
}

// TestPoolDefault: without a configured size a token gets
// DefaultMaxSessions (SoftHSM states no limit), and seven AEADs (three
// connections and a half) leave the eighth session to signatures.
func TestPoolDefault(t *testing.T) {
	p, tok := open(t, "pooldefault", Config{})
	if h := p.Health()[0]; h.Max != DefaultMaxSessions {
		t.Fatalf("pool of %d, want %d", h.Max, DefaultMaxSessions)
	}
	alg := provider.MustLookup("aes128-gcm")
	for i := range DefaultMaxSessions {
		a, err := p.NewAEAD(alg, make([]byte, 16))
		if i < DefaultMaxSessions-1 && err != nil {
			t.Fatalf("AEAD %d: %v", i, err)
		}
		if i == DefaultMaxSessions-1 && !errors.Is(err, ErrPoolExhausted) {
			t.Errorf("AEAD %d: %v, want ErrPoolExhausted", i, err)
		}
		if err == nil {
			defer provider.Release(a)
		}
	}
	s, err := p.Generate(context.Background(), tok.URI("k"), ECDSAP256)
	if err != nil {
		t.Fatalf("key generation with every AEAD session held: %v", err)
	}
	signOK(t, s)
}

func TestAEADInPlaceSmall(t *testing.T) {
	p, _ := open(t, "inplace", Config{})
	a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), bytes.Repeat([]byte{7}, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	buf := make([]byte, 0, 64)
	buf = append(buf, "hello"...)
	ct := a.Seal(buf[:0], make([]byte, 12), buf, []byte("ad"))
	pt, err := a.Open(ct[:0], make([]byte, 12), ct, []byte("ad"))
	if err != nil || string(pt) != "hello" {
		t.Fatalf("in place: %q, %v", pt, err)
	}
}

// TestCheckSpec: the registry asks the provider about pin and deny specs;
// a pkcs11: URI must parse, anything else is not its business.
func TestCheckSpec(t *testing.T) {
	var p Provider
	for spec, ok := range map[string]bool{
		"pkcs11:token=web": true, "pkcs11:token=web;serial=1": true, "cpu": true, "pkcs11": true,
		"pkcs11:token=web;serail=1": false, "pkcs11:token=web?unknown=1": false, "PKCS11:tokn=x": false,
	} {
		if err := p.CheckSpec(spec); (err == nil) != ok {
			t.Errorf("CheckSpec(%q) = %v", spec, err)
		}
	}
}
