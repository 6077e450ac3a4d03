package connection

import (
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/offload/offload/sshd/perm"
)

// The file holds the lines, one each, mode 0600; every session of the
// connection gets the same path; closing removes it, and no session made
// after that gets one. Without ExposeAuthInfo there is none.
func TestAuthInfoFile(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	a := &account{name: "u", uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}
	m := &mux{cfg: &settings{Config: Config{ExposeAuthInfo: true}}, log: slog.New(slog.DiscardHandler),
		perm: &perm.Permissions{AuthInfo: []string{"publickey ssh-ed25519 AAAA", "password"}}}
	var wg sync.WaitGroup
	paths := make([]string, 8)
	for i := range paths {
		wg.Go(func() { paths[i] = m.authInfoPath(a) })
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] || p == "" {
			t.Fatalf("paths %q: want one file for the connection", paths)
		}
	}
	b, err := os.ReadFile(paths[0])
	if err != nil || string(b) != "publickey ssh-ed25519 AAAA\npassword\n" {
		t.Errorf("contents %q, %v", b, err)
	}
	if fi, err := os.Stat(paths[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v, %v", fi.Mode(), err)
	}
	m.authInfo.close()
	if _, err := os.Stat(paths[0]); !os.IsNotExist(err) {
		t.Errorf("after close: %v", err)
	}
	if p := m.authInfoPath(a); p != "" {
		t.Errorf("a session after the end got %q", p)
	}
	off := &mux{cfg: &settings{}, perm: m.perm}
	if p := off.authInfoPath(a); p != "" {
		t.Errorf("ExposeAuthInfo off: %q", p)
	}
}
