package pkcs11

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/fileperm"
)

// A PIN file group or others may read is refused, its PIN not read;
// the same file at 0600 gives its PIN.
func TestReadPINSourcePermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pin")
	if err := os.WriteFile(path, []byte("secret-pin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o640)
	_, err := ReadPINSource(path)
	if !errors.Is(err, fileperm.ErrUnprotected) || strings.Contains(err.Error(), "secret-pin") {
		t.Fatalf("0640 PIN file: %v", err)
	}
	os.Chmod(path, 0o600)
	if pin, err := ReadPINSource("file://" + path); err != nil || pin != "secret-pin" {
		t.Fatalf("0600 PIN file: %q %v", pin, err)
	}
}
