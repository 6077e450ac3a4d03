//go:build cgo && !nopkcs11

package pkcs11

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
	"strings"
	"sync"
	"testing"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsm"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// faultyKey opens a provider with a fault injector and a P-256 token key.
func faultyKey(t *testing.T, label string) (*Provider, *pkcs11faults.Injector, crypto.Signer) {
	t.Helper()
	f := &pkcs11faults.Injector{}
	p, tok := open(t, label, Config{Faults: f})
	s, err := p.Generate(context.Background(), tok.URI("k"), ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return p, f, s
}

// mustFail injects ft into f.
func mustFail(t *testing.T, f *pkcs11faults.Injector, ft pkcs11faults.Fault) pkcs11faults.ID {
	t.Helper()
	id, err := f.Inject(ft)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func signOK(t *testing.T, s crypto.Signer) {
	t.Helper()
	d := sha256.Sum256([]byte("fault test"))
	sig, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	if !ecdsa.VerifyASN1(s.Public().(*ecdsa.PublicKey), d[:], sig) {
		t.Fatalf("signature does not verify")
	}
}

func TestFaultClasses(t *testing.T) {
	cases := map[uint]Class{
		pkcs11.CKR_SESSION_HANDLE_INVALID: ClassSession, pkcs11.CKR_SESSION_CLOSED: ClassSession,
		pkcs11.CKR_KEY_HANDLE_INVALID: ClassHandle, pkcs11.CKR_OBJECT_HANDLE_INVALID: ClassHandle,
		pkcs11.CKR_DEVICE_REMOVED: ClassDevice, pkcs11.CKR_TOKEN_NOT_PRESENT: ClassDevice, pkcs11.CKR_DEVICE_ERROR: ClassDevice,
		pkcs11.CKR_USER_NOT_LOGGED_IN: ClassLogin,
		pkcs11.CKR_PIN_INCORRECT:      ClassPIN, pkcs11.CKR_PIN_LOCKED: ClassPIN,
		pkcs11.CKR_MECHANISM_INVALID: ClassUnsupported, pkcs11.CKR_ENCRYPTED_DATA_INVALID: ClassInput,
		pkcs11.CKR_DEVICE_MEMORY: ClassBusy, pkcs11.CKR_VENDOR_DEFINED: ClassOther,
	}
	for code, want := range cases {
		err := wrapErr(pkcs11.Error(code), "sign", "unit0", "pkcs11:object=k")
		if got := ClassOf(err); got != want {
			t.Errorf("%v: class %v, want %v", err, got, want)
		}
	}
	err := wrapErr(pkcs11.Error(pkcs11.CKR_PIN_INCORRECT), "log in", "unit0", "")
	if !errors.Is(err, ErrPINRejected) || !strings.Contains(err.Error(), "CKR_PIN_INCORRECT") || !strings.Contains(err.Error(), "unit0") {
		t.Errorf("PIN error: %v", err)
	}
}

func TestFaultSessionReopened(t *testing.T) {
	_, f, s := faultyKey(t, "fault-session")
	opens := f.Calls("OpenSession")
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"SignInit"}, Code: pkcs11.CKR_SESSION_HANDLE_INVALID, Times: 1})
	signOK(t, s)
	if f.Calls("OpenSession") <= opens {
		t.Errorf("no new session opened after CKR_SESSION_HANDLE_INVALID")
	}
}

func TestFaultHandleRefound(t *testing.T) {
	_, f, s := faultyKey(t, "fault-handle")
	finds := f.Calls("FindObjectsInit")
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"SignInit"}, Code: pkcs11.CKR_KEY_HANDLE_INVALID, Times: 1})
	signOK(t, s)
	if f.Calls("FindObjectsInit") <= finds {
		t.Errorf("key not looked up again after CKR_KEY_HANDLE_INVALID")
	}
}

func TestFaultLoginRedone(t *testing.T) {
	_, f, s := faultyKey(t, "fault-login")
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"SignInit"}, Code: pkcs11.CKR_USER_NOT_LOGGED_IN, Times: 1})
	signOK(t, s)
	if n := f.Calls("SignInit"); n < 2 {
		t.Errorf("SignInit called %d times; want a retry after the login check", n)
	}
}

func TestFaultBusyRetried(t *testing.T) {
	_, f, s := faultyKey(t, "fault-busy")
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Sign"}, Code: pkcs11.CKR_DEVICE_MEMORY, Times: 2})
	signOK(t, s)
}

func TestFaultInputNotRetried(t *testing.T) {
	_, f, s := faultyKey(t, "fault-input")
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Sign"}, Code: pkcs11.CKR_DATA_LEN_RANGE, Times: 1})
	before := f.Calls("Sign")
	d := sha256.Sum256(nil)
	if _, err := s.Sign(rand.Reader, d[:], crypto.SHA256); ClassOf(err) != ClassInput {
		t.Errorf("err = %v, want class input", err)
	}
	if n := f.Calls("Sign") - before; n != 1 {
		t.Errorf("Sign tried %d times for a bad-input error, want 1", n)
	}
}

// TestFaultDeviceFailsClosed: a token key whose token is gone is an error
// (no software fallback), and the same signer works once the token is back.
func TestFaultDeviceFailsClosed(t *testing.T) {
	p, f, s := faultyKey(t, "fault-device")
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"SignInit", "GetTokenInfo"}, Code: pkcs11.CKR_DEVICE_REMOVED})
	d := sha256.Sum256(nil)
	_, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
	if !errors.Is(err, ErrTokenUnavailable) || !strings.Contains(err.Error(), "no software fallback") {
		t.Fatalf("err = %v, want ErrTokenUnavailable and a fail-closed explanation", err)
	}
	if h := p.Health()[0]; h.Up || h.Error == "" {
		t.Errorf("Health = %+v, want down with an error", h)
	}
	f.Clear()
	signOK(t, s)
	if h := p.Health()[0]; !h.Up || h.Recoveries == 0 {
		t.Errorf("Health = %+v, want up after recovery", h)
	}
}

// TestFaultOpenSessionLost: a token that fails C_OpenSession with a device
// error is recovered (here: found missing and marked down) by the call
// itself, not only by the health probe; a new AEAD then says the token is
// unavailable rather than that it does not offer AES-GCM, and both work
// again once the token answers.
func TestFaultOpenSessionLost(t *testing.T) {
	p, f, s := faultyKey(t, "fault-open")
	slot := p.Tokens()[0].SlotID
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"SignInit"}, Code: pkcs11.CKR_SESSION_HANDLE_INVALID, Times: 1})
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"open", "probe"}, Code: pkcs11.CKR_TOKEN_NOT_PRESENT, Slots: []uint{slot}})
	d := sha256.Sum256(nil)
	if _, err := s.Sign(rand.Reader, d[:], crypto.SHA256); !errors.Is(err, ErrTokenUnavailable) {
		t.Fatalf("sign: %v, want ErrTokenUnavailable", err)
	}
	if h := p.Health()[0]; h.Up {
		t.Errorf("Health = %+v after C_OpenSession failed with a device error, want down", h)
	}
	_, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), make([]byte, 16))
	if !errors.Is(err, ErrTokenUnavailable) || errors.Is(err, ErrUnsupported) ||
		!strings.Contains(err.Error(), `token "fault-open" offering aes128-gcm unavailable`) || strings.Contains(err.Error(), "does not offer") {
		t.Errorf("new AEAD with the token down: %v, want it to say the token is unavailable", err)
	}
	f.Clear()
	signOK(t, s)
	a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), make([]byte, 16))
	if err != nil {
		t.Fatalf("new AEAD after the token came back: %v", err)
	}
	provider.Release(a)
}

// TestFaultAEADFallsBack: an AEAD whose token dies mid-connection moves to
// Go with the same key; the bytes on the wire do not change; its
// FallbackNotifier hears of it once, with the nonce of the operation that
// fell back.
func TestFaultAEADFallsBack(t *testing.T) {
	f := &pkcs11faults.Injector{}
	p, _ := open(t, "fault-aead", Config{Faults: f})
	key := bytes.Repeat([]byte{9}, 16)
	a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), key)
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	var fellAt [][]byte
	if !provider.OnFallback(a, func(n []byte, _ error) { fellAt = append(fellAt, bytes.Clone(n)) }) {
		t.Fatal("the token AEAD does not take a FallbackNotifier")
	}
	block, _ := aes.NewCipher(key)
	ref, _ := cipher.NewGCM(block)
	nonce := make([]byte, 12)
	seal := func(msg string) {
		t.Helper()
		nonce[11]++
		got := a.Seal(nil, nonce, []byte(msg), []byte("ad"))
		if want := ref.Seal(nil, nonce, []byte(msg), []byte("ad")); !bytes.Equal(got, want) {
			t.Fatalf("Seal(%q) differs from Go's AES-GCM", msg)
		}
		if pt, err := a.Open(nil, nonce, got, []byte("ad")); err != nil || string(pt) != msg {
			t.Fatalf("Open: %q, %v", pt, err)
		}
	}
	seal("before")
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Encrypt"}, Code: pkcs11.CKR_SESSION_HANDLE_INVALID, Times: 1})
	seal("session lost once") // the key moves to a new session
	if lanesOf(a)[0].FellBack() {
		t.Fatalf("fell back to Go after a recoverable session fault")
	}
	if len(fellAt) != 0 {
		t.Fatalf("fallback reported after a recoverable session fault")
	}
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Encrypt", "GetTokenInfo"}, Code: pkcs11.CKR_DEVICE_ERROR})
	seal("token gone")
	seal("still gone")
	if !lanesOf(a)[0].FellBack() {
		t.Errorf("expected the AEAD to continue in Go")
	}
	if len(fellAt) != 1 || fellAt[0][11] != 3 {
		t.Errorf("fallbacks reported at nonces %x, want one at the third seal's", fellAt)
	}
}

func TestFaultAEADNoFallback(t *testing.T) {
	f := &pkcs11faults.Injector{}
	p, _ := open(t, "fault-nofallback", Config{Faults: f, NoFallback: true})
	a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	ct := a.Seal(nil, make([]byte, 12), []byte("x"), nil)
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Decrypt", "GetTokenInfo"}, Code: pkcs11.CKR_DEVICE_ERROR})
	if _, err := a.Open(nil, make([]byte, 12), ct, nil); !errors.Is(err, ErrTokenUnavailable) && ClassOf(err) != ClassDevice {
		t.Errorf("Open with the token gone: %v, want a device error", err)
	}
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Encrypt"}, Code: pkcs11.CKR_DEVICE_ERROR})
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "fallback is off") {
			t.Errorf("Seal with the token gone and fallback off: panic %v", r)
		}
	}()
	a.Seal(nil, make([]byte, 12), []byte("x"), nil)
}

// TestFailover: a key imported into two tokens signs on the second when
// the first is lost, and refuses a second token whose key differs.
func TestFailover(t *testing.T) {
	prim := softhsm.NewToken(t, softhsm.WithLabel("primary"))
	back := softhsm.NewToken(t, softhsm.WithLabel("backup"))
	f := &pkcs11faults.Injector{}
	p, err := Open(Config{ModulePath: prim.Module, PINSource: prim.PINFile, HealthInterval: -1, Faults: f,
		Tokens:   []*uri.URI{{Token: "primary"}, {Token: "backup"}},
		Failover: map[string]string{"primary": "backup"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tok := range []*softhsm.Token{prim, back} {
		if _, err := p.Import(ctx, tok.URI("host"), key); err != nil {
			t.Fatal(err)
		}
	}
	// Without token=, the copy on the failover token is not a second match.
	s, err := p.Signer(ctx, "pkcs11:object=host")
	if err != nil {
		t.Fatalf("Signer: %v", err)
	}
	signOK(t, s)
	primSlot := p.Tokens()[0].SlotID
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"SignInit", "GetTokenInfo", "OpenSession"}, Code: pkcs11.CKR_DEVICE_REMOVED, Slots: []uint{primSlot}})
	signOK(t, s) // on the backup
	if h := p.Health(); h[0].Up || !h[1].Up {
		t.Errorf("Health = %+v, want primary down and backup up", h)
	}

	// A backup holding a different key under the same label is refused.
	other := softhsm.NewToken(t, softhsm.WithLabel("impostor"))
	f.Clear()
	p2, err := Open(Config{ModulePath: prim.Module, PINSource: prim.PINFile, HealthInterval: -1, Faults: f,
		Tokens:   []*uri.URI{{Token: "primary"}, {Token: "impostor"}},
		Failover: map[string]string{"primary": "impostor"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if _, err := p2.Generate(ctx, other.URI("host"), ECDSAP256); err != nil {
		t.Fatal(err)
	}
	s2, err := p2.Signer(ctx, "pkcs11:token=primary;object=host")
	if err != nil {
		t.Fatal(err)
	}
	signOK(t, s2)
	primSlot = p2.Tokens()[0].SlotID
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"SignInit", "GetTokenInfo", "OpenSession"}, Code: pkcs11.CKR_DEVICE_REMOVED, Slots: []uint{primSlot}})
	d := sha256.Sum256(nil)
	if _, err := s2.Sign(rand.Reader, d[:], crypto.SHA256); err == nil || !strings.Contains(err.Error(), "different key") {
		t.Errorf("failover to a token with another key: %v, want a refusal", err)
	}
}

// TestConcurrent signs and seals from many goroutines over a small pool;
// run it with -race.
func TestConcurrent(t *testing.T) {
	p, tok := open(t, "concurrent", Config{MaxSessions: 3})
	ctx := context.Background()
	s, err := p.Generate(ctx, tok.URI("k"), ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	ed, err := p.GenerateSigner(ctx, provider.MustLookup("ed25519"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(ed)
	a, err := p.NewAEAD(provider.MustLookup("aes256-gcm"), make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				d := sha256.Sum256([]byte{byte(g), byte(i)})
				switch i % 3 {
				case 0:
					sig, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
					if err != nil || !ecdsa.VerifyASN1(s.Public().(*ecdsa.PublicKey), d[:], sig) {
						errs <- errors.Join(errors.New("ecdsa"), err)
						return
					}
				case 1:
					if _, err := ed.Sign(rand.Reader, d[:], crypto.Hash(0)); err != nil {
						errs <- err
						return
					}
				case 2:
					nonce := d[:12]
					ct := a.Seal(nil, nonce, d[:], nil)
					if pt, err := a.Open(nil, nonce, ct, nil); err != nil || !bytes.Equal(pt, d[:]) {
						errs <- errors.Join(errors.New("aead"), err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	lanes := len(lanesOf(a)) // the AEAD took a second session while its calls overlapped
	if h := p.Health()[0]; h.InUse != lanes || h.Idle+h.InUse > 3 {
		t.Errorf("after the run: %+v, want only the AEAD's %d sessions in use and at most 3 in all", h, lanes)
	}
}

// FuzzTokenBytes feeds the parsers of what a token returns (EC points,
// r‖s signatures) arbitrary bytes: errors, never panics.
func FuzzTokenBytes(f *testing.F) {
	f.Add([]byte{0x04, 0x20, 1, 2, 3})
	f.Add(append([]byte{0x04, 0x41, 0x04}, make([]byte, 64)...))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, size := range []int{32, 65, 97} {
			if raw, err := unwrapPoint(b, size); err == nil && len(raw) != size {
				t.Fatalf("unwrapPoint returned %d bytes, want %d", len(raw), size)
			}
		}
		parseECPoint(elliptic.P256(), b, 65)
		parseECPoint(elliptic.P384(), b, 97)
		if der, err := ecdsaASN1(b); err == nil && len(der) < 8 {
			t.Fatalf("ecdsaASN1 produced %d bytes", len(der))
		}
	})
}
