//go:build cgo && !nopkcs11

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPINFilePermissions: the host key's token PIN file is refused while
// group or others may access it (as a private key file would be), and
// used once it is the owner's alone.
func TestPINFilePermissions(t *testing.T) {
	tok, keyURI := tokenHostKey(t, "pin-perm")
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
