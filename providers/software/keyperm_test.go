package software_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/fileperm"
	"github.com/offload/offload/providers/software"
)

// A key file group or others may read is refused, as OpenSSH refuses it;
// the same file at 0600 opens.
func TestSignerRefusesUnprotectedKey(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	p := software.New()
	defer p.Close()
	os.Chmod(path, 0o644)
	if _, err := p.Signer(context.Background(), path); !errors.Is(err, fileperm.ErrUnprotected) {
		t.Fatalf("0644 key: %v", err)
	}
	os.Chmod(path, 0o600)
	if _, err := p.Signer(context.Background(), path); err != nil {
		t.Fatalf("0600 key: %v", err)
	}
}
