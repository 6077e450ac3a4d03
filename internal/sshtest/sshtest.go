// Package sshtest holds what the SSH tests of several packages share: a
// log buffer safe for the server's goroutines, OpenSSH client keys and
// an ssh-agent.
package sshtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// LogBuffer collects log output written from many goroutines.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WaitFor reports whether s is written within d. A server's log reaches
// the buffer after the client has seen what the record is about: through
// the daemon's stderr pipe, and for a child's records through the monitor
// too.
func (l *LogBuffer) WaitFor(s string, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(l.String(), s) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// Await reports whether s is written before the test's startup deadline
// (testenv.StartupDeadline): a log line is an event, and a loaded machine
// may take far longer to write it than a quiet one.
func (l *LogBuffer) Await(t testing.TB, s string) bool {
	return l.WaitFor(s, time.Until(testenv.StartupDeadline(t)))
}

// ClientKey makes an unencrypted ed25519 key with ssh-keygen in dir and
// returns the private key's path and the public key line. It skips (or,
// with OFFLOAD_REQUIRE_TOOLS=1, fails) t when ssh-keygen is missing.
func ClientKey(t testing.TB, dir string) (path string, pub []byte) {
	t.Helper()
	keygen := testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	path = filepath.Join(dir, "id_ed25519")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return path, pub
}
