package fileperm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

func checkMode(t *testing.T, mode os.FileMode) error {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Check(f, p, "private key")
}

// OpenSSH's rule: any group or other bit on a file the user owns.
func TestCheckModes(t *testing.T) {
	for _, m := range []os.FileMode{0o600, 0o400, 0o700} {
		if err := checkMode(t, m); err != nil {
			t.Errorf("%04o refused: %v", m, err)
		}
	}
	for _, m := range []os.FileMode{0o644, 0o640, 0o604, 0o610, 0o601, 0o666} {
		err := checkMode(t, m)
		if !errors.Is(err, ErrUnprotected) {
			t.Errorf("%04o accepted (%v)", m, err)
			continue
		}
		if !strings.Contains(err.Error(), "UNPROTECTED PRIVATE KEY FILE") || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("%04o: message %q", m, err)
		}
	}
}

// A file another user owns is not checked, as in OpenSSH.
func TestCheckOtherOwner(t *testing.T) {
	testenv.Root(t) // chown
	p := filepath.Join(t.TempDir(), "key")
	os.WriteFile(p, []byte("x"), 0o644)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Check(f, p, "PIN"); err != nil {
		t.Errorf("file owned by another user refused: %v", err)
	}
}
