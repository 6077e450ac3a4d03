//go:build unix

package auth

import (
	"path/filepath"
	"syscall"
	"testing"
)

func TestFIFOInPlaceOfKeysFile(t *testing.T) {
	w := newWorld(t)
	if err := syscall.Mkfifo(filepath.Join(w.home, ".ssh/authorized_keys"), 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	w.own(filepath.Join(w.home, ".ssh/authorized_keys"))
	key := newEd25519(t)
	c, _ := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey") // and does not hang
	if !w.logged("not a regular file") {
		t.Fatalf("log:\n%s", w.logs)
	}
}
