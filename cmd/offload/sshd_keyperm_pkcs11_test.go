//go:build cgo && !nopkcs11

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// TestPINFilePermissions: the host key's token PIN file is refused while
// group or others may access it (as a private key file would be), and
// used once it is the owner's alone.
func TestPINFilePermissions(t *testing.T) {
	tok := softhsmtest.NewToken(t, "pin-perm")
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Generate(context.Background(), tok.URI("hostkey"), pkcs11.Ed25519); err != nil {
		p.Close()
		t.Fatal(err)
	}
	p.Close()
	keyURI := (&uri.URI{Token: tok.Label, Object: "hostkey"}).String()
	dir := t.TempDir()
	cfg := writeFileT(t, dir, "sshd_config", "ListenAddress 127.0.0.1:0\nCalibrationCache none\nHostKey "+keyURI+
		"\nPKCS11Module "+tok.Module+"\nPKCS11PinSource "+tok.PINFile+"\nPKCS11StateDir "+filepath.Join(dir, "state")+"\n")
	if err := os.Chmod(tok.PINFile, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runSshd("-t", "-f", cfg)
	if err == nil || !strings.Contains(err.Error()+stderr, "PIN file "+tok.PINFile+" has permissions 0644") {
		t.Fatalf("-t with a 0644 PIN file: %v\n%s", err, stderr)
	}
	if strings.Contains(err.Error()+stderr, tok.PIN) {
		t.Error("PIN printed")
	}
	os.Chmod(tok.PINFile, 0o600)
	if _, stderr, err := runSshd("-t", "-f", cfg); err != nil {
		t.Fatalf("-t with a 0600 PIN file: %v\n%s", err, stderr)
	}
}
