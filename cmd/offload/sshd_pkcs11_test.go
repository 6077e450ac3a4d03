//go:build cgo && !nopkcs11

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// TestSshdPKCS11HostKey checks -t and -T with the host key in a SoftHSM
// token, reached through PKCS11Module and PKCS11PinSource.
func TestSshdPKCS11HostKey(t *testing.T) {
	// The key URI names the token and object only; the module and the PIN
	// come from the provider keywords.
	tok, keyURI := tokenHostKey(t, "sshd-cmd")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sshd_config")
	state := filepath.Join(dir, "state")
	text := "ListenAddress 127.0.0.1:0\nCalibrationCache none\nHostKey " + keyURI + "\nPKCS11Module " + tok.Module +
		"\nPKCS11PinSource " + tok.PINFile + "\nPKCS11StateDir " + state + "\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runSshd("-t", "-f", cfg); err != nil {
		t.Fatalf("-t: %v", err)
	}
	out, _, err := runSshd("-T", "-f", cfg)
	if err != nil {
		t.Fatalf("-T: %v", err)
	}
	if !strings.Contains(out, "# hostkey "+keyURI+": ssh-ed25519 SHA256:") || !strings.Contains(out, "held by pkcs11\n") {
		t.Errorf("-T does not show the token key:\n%s", out)
	}
	if strings.Contains(out, tok.PIN) {
		t.Error("PIN printed")
	}
	// A pin sends bulk crypto to the token.
	out, _, err = runSshd("-T", "-f", cfg, "-o", "ProviderMap=aes128-gcm=pkcs11")
	if err != nil {
		t.Fatalf("-T with a pin: %v", err)
	}
	if !strings.Contains(out, "# cipher aes128-gcm@openssh.com: aes128-gcm by pkcs11 (pinned to \"pkcs11\")") {
		t.Errorf("-T does not show the pinned token cipher:\n%s", out)
	}

	// A wrong PIN fails the check with a clear error that holds no PIN.
	bad := filepath.Join(dir, "badpin")
	os.WriteFile(bad, []byte("0000-wrong\n"), 0o600)
	_, _, err = runSshd("-t", "-f", cfg, "-o", "PKCS11PinSource="+bad)
	if err == nil || strings.Contains(err.Error(), "0000-wrong") || strings.Contains(err.Error(), tok.PIN) {
		t.Fatalf("wrong PIN: err = %v", err)
	}
	t.Logf("wrong PIN error: %v", err)
	// ExecStartPre, ExecStart and reloads run -t again: the refused PIN is
	// not sent again (providers/pkcs11 counts the logins; a new process
	// reads the marker from PKCS11StateDir).
	_, _, err = runSshd("-t", "-f", cfg, "-o", "PKCS11PinSource="+bad)
	if err == nil || !strings.Contains(err.Error(), "not sent again") {
		t.Errorf("second -t with the refused PIN: %v, want it refused without sending it", err)
	}
	if m, _ := filepath.Glob(filepath.Join(state, "pin-refused-*.json")); len(m) != 1 {
		t.Errorf("markers in PKCS11StateDir: %v, want one", m)
	}
}

// TestSshdStartsWithoutAccelerator: a configured PKCS #11 module whose
// token is absent, or a module that does not load, does not stop a
// server whose host keys are files: -t passes with a warning, -T says
// what is missing. A host key in the missing token still fails closed.
func TestSshdStartsWithoutAccelerator(t *testing.T) {
	tok := softhsmtest.NewToken(t, "sshd-present")
	absent := strings.Replace(tok.TokenURI(), "token=sshd-present", "token=sshd-absent", 1)
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nPKCS11StateDir none\nPKCS11Token "+absent+"\nProviderMap aes128-gcm=pkcs11\n")
	if _, _, err := runSshd("-t", "-f", cfg); err != nil {
		t.Fatalf("-t with the token absent and file host keys: %v", err)
	}
	out, _, err := runSshd("-T", "-f", cfg)
	if err != nil {
		t.Fatalf("-T: %v", err)
	}
	if !strings.Contains(out, "#     MISSING: token pkcs11:token=sshd-absent") || !strings.Contains(out, "not attached") ||
		!strings.Contains(out, "#   warning: policy entry \"aes128-gcm=pkcs11\"") {
		t.Errorf("-T does not say which token is missing:\n%s", out)
	}
	keyOnAbsent := strings.Replace(absent, "token=sshd-absent", "token=sshd-absent;object=host", 1)
	_, _, err = runSshd("-t", "-f", cfg, "-o", "HostKey="+keyOnAbsent)
	if err == nil || !strings.Contains(err.Error(), "not attached") || !strings.Contains(err.Error(), "no software fallback") {
		t.Errorf("host key in the absent token: %v, want fail closed, naming it", err)
	}

	noModule := writeConfig(t, "ListenAddress 127.0.0.1:0\nPKCS11Module /nonexistent/libpkcs11.so\nPKCS11Token pkcs11:token=x\n")
	if _, _, err := runSshd("-t", "-f", noModule); err != nil {
		t.Fatalf("-t with a module that does not load and file host keys: %v", err)
	}
	out, _, err = runSshd("-T", "-f", noModule)
	if err != nil || !strings.Contains(out, "MISSING: token pkcs11:token=x not attached: pkcs11: module /nonexistent/libpkcs11.so") {
		t.Errorf("-T with the module missing: %v\n%s", err, out)
	}
	_, _, err = runSshd("-t", "-f", noModule, "-o", "HostKey=pkcs11:token=x;object=host")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/libpkcs11.so") {
		t.Errorf("host key with the module missing: %v, want fail closed, naming the module", err)
	}
}

// TestSshdPKCS11Environment: PKCS11Environment sets the module's
// environment, so a configuration file reaches a SoftHSM token without
// SOFTHSM2_CONF in the environment of whoever runs it.
func TestSshdPKCS11Environment(t *testing.T) {
	tok := softhsmtest.NewToken(t, "sshd-env")
	keyURI := tok.URI("host")
	p, err := pkcs11.OpenURI(keyURI, pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Generate(context.Background(), keyURI, pkcs11.Ed25519); err != nil {
		t.Fatal(err)
	}
	p.Close()
	cfg := filepath.Join(t.TempDir(), "sshd_config")
	os.WriteFile(cfg, []byte("ListenAddress 127.0.0.1:0\nCalibrationCache none\nPKCS11StateDir none\nHostKey "+keyURI+
		"\nPKCS11Environment SOFTHSM2_CONF="+tok.ConfPath+"\n"), 0o644)
	t.Setenv("SOFTHSM2_CONF", filepath.Join(t.TempDir(), "nothing-here.conf"))
	if _, _, err := runSshd("-t", "-f", cfg); err != nil {
		t.Fatalf("-t with SOFTHSM2_CONF from PKCS11Environment: %v", err)
	}
	if os.Getenv("SOFTHSM2_CONF") != tok.ConfPath {
		t.Errorf("SOFTHSM2_CONF = %q", os.Getenv("SOFTHSM2_CONF"))
	}
}

// TestSshdPKCS11Reload reloads a daemon whose host key is in a token: the
// old generation's provider closes while the new one's stays logged in,
// so the new connections still get host-key signatures.
func TestSshdPKCS11Reload(t *testing.T) {
	tok := softhsmtest.NewToken(t, "sshd-reload")
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Generate(context.Background(), tok.URI("hostkey"), pkcs11.Ed25519); err != nil {
		p.Close()
		t.Fatal(err)
	}
	p.Close()
	cfg := filepath.Join(t.TempDir(), "sshd_config")
	text := "ListenAddress 127.0.0.1:0\nCalibrationCache none\nPKCS11StateDir none\nHostKey " + tok.URI("hostkey") + "\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _, _ := startTestDaemon(t, cfg)
	addr := d.listeners[0].Addr().String()
	first := hostKeyOf(t, addr)
	for i := 0; i < 2; i++ {
		d.reload(context.Background())
		d.retired.Wait() // the old generation has closed its provider
		if k := hostKeyOf(t, addr); string(k.Marshal()) != string(first.Marshal()) {
			t.Fatalf("reload %d: host key changed", i+1)
		}
	}
	if d.stats.reloads.Load() != 2 {
		t.Fatalf("reloads = %d", d.stats.reloads.Load())
	}

	// The PIN file changes to a wrong PIN: the reload sees it, is refused,
	// and the running generation keeps serving. The wrong PIN is not sent
	// while the token stays logged in with the right one.
	right, _ := os.ReadFile(tok.PINFile)
	os.WriteFile(tok.PINFile, []byte("changed-to-wrong\n"), 0o600)
	d.reload(context.Background())
	if d.stats.reloadErrors.Load() != 1 {
		t.Errorf("reload with a changed, wrong PIN: %d refused, want 1", d.stats.reloadErrors.Load())
	}
	if k := hostKeyOf(t, addr); string(k.Marshal()) != string(first.Marshal()) {
		t.Fatalf("after the refused reload: host key changed")
	}
	os.WriteFile(tok.PINFile, right, 0o600)
	d.reload(context.Background())
	if d.stats.reloads.Load() != 3 {
		t.Errorf("reload with the PIN restored: reloads = %d, want 3", d.stats.reloads.Load())
	}
}

// TestSshdPKCS11Cipher serves a session whose packet cipher runs in the
// token (ProviderMap aes128-gcm=pkcs11) and checks the metrics saw it.
func TestSshdPKCS11Cipher(t *testing.T) {
	tok := softhsmtest.NewToken(t, "sshd-cipher")
	dir := t.TempDir()
	cc, ak := clientFor(t, dir)
	cc.Config.Ciphers = []string{"aes128-gcm@openssh.com"}
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nStrictModes no\nAuthorizedKeysFile "+ak+
		"\nPKCS11Token "+tok.TokenURI()+"\nProviderMap aes128-gcm=pkcs11\nCiphers aes128-gcm@openssh.com\n")
	d, _, _ := startTestDaemon(t, cfg)
	c, err := ssh.Dial("tcp", d.listeners[0].Addr().String(), cc)
	if err != nil {
		t.Fatal(err)
	}
	runEcho(t, c)
	c.Close()
	var seals uint64
	for _, s := range d.metrics.Snapshot() {
		if s.Provider == "pkcs11" && s.Algorithm == "aes128-gcm" && s.Op == "seal" {
			seals += s.Ops
		}
	}
	if seals == 0 {
		t.Errorf("no aes128-gcm seals counted for pkcs11: %+v", d.metrics.Snapshot())
	}
}

// tokenHostKey makes a SoftHSM token labelled label with an Ed25519 key
// "hostkey" and returns it with the key's URI naming token and object
// only (the module and PIN come from the configuration's keywords).
func tokenHostKey(t *testing.T, label string) (*softhsmtest.Token, string) {
	t.Helper()
	tok := softhsmtest.NewToken(t, label)
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Generate(context.Background(), tok.URI("hostkey"), pkcs11.Ed25519); err != nil {
		t.Fatal(err)
	}
	return tok, (&uri.URI{Token: tok.Label, Object: "hostkey"}).String()
}
