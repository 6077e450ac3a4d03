//go:build cgo && !nopkcs11

package pkcs11

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsm"
)

// forgetProcess drops the in-memory refusals, as a new process starts
// without them: only the state directory remembers.
func forgetProcess() {
	refusedInProcess.Lock()
	clear(refusedInProcess.m)
	refusedInProcess.Unlock()
}

func logins(t *testing.T, ref string, cfg Config) (int, error) {
	t.Helper()
	f := &pkcs11faults.Injector{}
	cfg.Faults, cfg.HealthInterval = f, -1
	p, err := OpenURI(ref, cfg)
	if err == nil {
		p.Close()
	}
	return int(f.Calls("Login")), err
}

// TestPINGuardAcrossStarts: a PIN the token refused is sent once, then not
// again — by the same process, or by a later one reading the state dir —
// until the PIN file changes; the new PIN is then tried. The PIN never
// reaches the state dir.
func TestPINGuardAcrossStarts(t *testing.T) {
	t.Cleanup(forgetProcess)
	tok := softhsm.NewToken(t, softhsm.WithLabel("pinguard"))
	state := t.TempDir()
	pinFile := filepath.Join(t.TempDir(), "pin")
	const wrong = "wrong-pin-31337"
	if err := os.WriteFile(pinFile, []byte(wrong+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := strings.Replace(tok.TokenURI(), "pin-source="+escapeForTest(tok.PINFile), "pin-source="+escapeForTest(pinFile), 1)
	cfg := Config{StateDir: state}
	if n, err := logins(t, ref, cfg); n != 1 || !errors.Is(err, ErrPINRejected) {
		t.Fatalf("first start: %d logins, %v; want 1 and the refusal", n, err)
	}
	n, err := logins(t, ref, cfg)
	if n != 0 || !errors.Is(err, ErrPINRejected) || !strings.Contains(err.Error(), "not sent again") {
		t.Fatalf("same process: %d logins, %v; want 0 and a refusal saying why", n, err)
	}
	forgetProcess()
	n, err = logins(t, ref, cfg)
	if n != 0 || !errors.Is(err, ErrPINRejected) || !strings.Contains(err.Error(), state) {
		t.Fatalf("next start (state dir): %d logins, %v; want 0, naming the marker", n, err)
	}
	entries, _ := os.ReadDir(state)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(state, e.Name()))
		if strings.Contains(string(b), wrong) {
			t.Errorf("%s holds the PIN", e.Name())
		}
	}
	// The administrator fixes the PIN file: the new PIN is tried, once.
	time.Sleep(10 * time.Millisecond) // a distinct modification time on coarse clocks
	if err := os.WriteFile(pinFile, []byte(tok.PIN+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	forgetProcess()
	if n, err := logins(t, ref, cfg); n != 1 || err != nil {
		t.Errorf("after the PIN file changed: %d logins, %v; want 1 and success", n, err)
	}
}

// TestPINGuardValue: a refused pin-value is recognised by a short keyed
// tag; another value is tried.
func TestPINGuardValue(t *testing.T) {
	t.Cleanup(forgetProcess)
	tok := softhsm.NewToken(t, softhsm.WithLabel("pinvalue"))
	state := t.TempDir()
	withValue := func(pin string) string {
		return strings.Replace(tok.TokenURI(), "pin-source="+escapeForTest(tok.PINFile), "pin-value="+pin, 1)
	}
	cfg := Config{StateDir: state}
	if n, err := logins(t, withValue("bad-1"), cfg); n != 1 || !errors.Is(err, ErrPINRejected) {
		t.Fatalf("first: %d, %v", n, err)
	}
	forgetProcess()
	if n, err := logins(t, withValue("bad-1"), cfg); n != 0 || !errors.Is(err, ErrPINRejected) {
		t.Fatalf("again: %d, %v; want no login", n, err)
	}
	if n, err := logins(t, withValue(tok.PIN), cfg); n != 1 || err != nil {
		t.Errorf("another PIN: %d, %v; want it tried", n, err)
	}
}

// TestPINChangedWhileLoggedIn: a provider opened while another still
// keeps the token logged in, with a PIN that differs from the one that
// logged in, is refused without sending it — a reload must not silently
// keep the old login when the PIN file changed to a wrong PIN.
func TestPINChangedWhileLoggedIn(t *testing.T) {
	tok := softhsm.NewToken(t, softhsm.WithLabel("pinchanged"))
	first, err := OpenURI(tok.TokenURI(), Config{HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := os.WriteFile(tok.PINFile, []byte("changed-and-wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := logins(t, tok.TokenURI(), Config{})
	if n != 0 || !errors.Is(err, ErrPINRejected) || !strings.Contains(err.Error(), "differs from the one the token is logged in with") {
		t.Errorf("second provider with a changed PIN: %d logins, %v", n, err)
	}
	if err := os.WriteFile(tok.PINFile, []byte(tok.PIN+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := logins(t, tok.TokenURI(), Config{}); err != nil {
		t.Errorf("second provider with the same PIN: %d logins, %v", n, err)
	}
}
