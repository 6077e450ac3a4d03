package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var offload struct {
	once sync.Once
	path string
	err  error
}

// OffloadBinary builds cmd/offload once per test binary and returns its
// path. It lives in a directory only root may enter and only root may
// execute it, as scripts/run.sh's bin/offload under umask 077: a
// server's children, which run as other users, must start all the same.
func OffloadBinary(t testing.TB) string {
	t.Helper()
	offload.once.Do(func() {
		dir, err := os.MkdirTemp("", "offload-bin")
		if err != nil {
			offload.err = err
			return
		}
		os.Chmod(dir, 0o700)
		path := filepath.Join(dir, "offload")
		out, err := exec.Command("go", "build", "-o", path, "github.com/offload/offload/cmd/offload").CombinedOutput()
		if err != nil {
			offload.err = fmt.Errorf("go build: %v: %s", err, out)
			return
		}
		os.Chmod(path, 0o700)
		offload.path = path
	})
	if offload.err != nil {
		t.Fatal(offload.err)
	}
	return offload.path
}
