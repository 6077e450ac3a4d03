package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

type build struct {
	once sync.Once
	path string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*build{} // by build tags
)

// OffloadBinary builds cmd/offload once per test binary and returns its
// path. It lives in a directory only root may enter and only root may
// execute it, as scripts/run.sh's bin/offload under umask 077: a
// server's children, which run as other users, must start all the same.
func OffloadBinary(t testing.TB) string {
	t.Helper()
	return OffloadBinaryTags(t, "")
}

// OffloadBinaryTags is OffloadBinary built with the build tags given
// (comma-separated), for test-only hooks such as offloadcrashhook.
func OffloadBinaryTags(t testing.TB, tags string) string {
	t.Helper()
	buildsMu.Lock()
	b := builds[tags]
	if b == nil {
		b = &build{}
		builds[tags] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "offload-bin")
		if err != nil {
			b.err = err
			return
		}
		os.Chmod(dir, 0o700)
		path := filepath.Join(dir, "offload")
		args := []string{"build", "-o", path}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		out, err := exec.Command("go", append(args, "github.com/offload/offload/cmd/offload")...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build: %v: %s", err, out)
			return
		}
		os.Chmod(path, 0o700)
		b.path = path
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
