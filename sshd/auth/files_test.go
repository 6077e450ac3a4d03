package auth

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpandTokens(t *testing.T) {
	u := &user.User{Username: "alice", Uid: "1000", HomeDir: "/home/alice"}
	for pattern, want := range map[string]string{
		".ssh/authorized_keys": "/home/alice/.ssh/authorized_keys",
		"/etc/ssh/keys/%u":     "/etc/ssh/keys/alice",
		"%h/.ssh/k_%U":         "/home/alice/.ssh/k_1000",
		"/etc/100%%/%u":        "/etc/100%/alice",
		"keys/../../../etc/%u": "/etc/alice",
		"/srv/%u/%h":           "/srv/alice/home/alice",
	} {
		if got, err := userPath(pattern, u); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", pattern, got, err, want)
		}
	}
	for _, bad := range []string{"%", "a%", "%s", "%H"} {
		if _, err := userPath(bad, u); err == nil {
			t.Errorf("%q expanded", bad)
		}
	}
}

func TestStrictModes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
	}{
		{"group-writable file", func(w *world) { os.Chmod(filepath.Join(w.home, ".ssh/authorized_keys"), 0o620) }},
		{"world-writable .ssh", func(w *world) { os.Chmod(filepath.Join(w.home, ".ssh"), 0o777) }},
		{"group-writable home", func(w *world) { os.Chmod(w.home, 0o770) }},
		{"not a regular file", func(w *world) {
			p := filepath.Join(w.home, ".ssh/authorized_keys")
			os.Remove(p)
			os.Mkdir(p, 0o700)
			w.own(p)
		}},
		{"too large", func(w *world) {
			p := filepath.Join(w.home, ".ssh/authorized_keys")
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte(strings.Repeat("#\n", MaxFileSize/2)))
			f.Close()
		}},
		{"other owner", func(w *world) {
			if os.Getuid() != 0 {
				w.t.Skip("chown needs root")
			}
			p := filepath.Join(w.home, ".ssh/authorized_keys")
			os.Chown(p, 4242, 4242)
			os.Chmod(p, 0o644) // readable by alice: the owner alone is wrong
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			key := newEd25519(t)
			w.authorize(authLine("", key.PublicKey()))
			tc.setup(w)
			c, _ := startRun(t, w.cfg)
			c.startService()
			wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
			if !w.logged("authorized keys file ignored") || tc.name == "not a regular file" && !w.logged("not a regular file") {
				t.Fatalf("log lacks the file problem:\n%s", w.logs)
			}
			if tc.name == "too large" || tc.name == "not a regular file" {
				return // not a mode problem: IgnoreFileModes does not help
			}
			w.cfg.IgnoreFileModes = true
			c, ch := startRun(t, w.cfg)
			c.startService()
			wantSuccess(t, c.signed("ssh-ed25519", key), ch)
		})
	}
}

func TestSymlinkedKeysFileChecksTarget(t *testing.T) {
	w := newWorld(t)
	key := newEd25519(t)
	shared := t.TempDir()
	os.Chmod(shared, 0o777)
	target := filepath.Join(shared, "keys")
	os.WriteFile(target, []byte(authLine("", key.PublicKey())+"\n"), 0o600)
	if err := os.Symlink(target, filepath.Join(w.home, ".ssh/authorized_keys")); err != nil {
		t.Fatal(err)
	}
	c, _ := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
	var fe *FileError
	if err := checkDirs(filepath.Join(w.home, ".ssh/authorized_keys"), must(w.lookup("alice"))); !errors.As(err, &fe) || !errors.Is(err, errBadOwner) {
		t.Fatalf("checkDirs: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestSeveralKeyFilesAndNone(t *testing.T) {
	w := newWorld(t)
	key := newEd25519(t)
	w.writeFile(".ssh/authorized_keys2", authLine("no-pty", key.PublicKey())+"\n", 0o600)
	w.cfg.AuthorizedKeysFiles = []string{".ssh/missing", "/nonexistent/%u", "%h/.ssh/authorized_keys2"}
	c, ch := startRun(t, w.cfg)
	c.startService()
	if p := wantSuccess(t, c.signed("ssh-ed25519", key), ch); !p.NoPTY {
		t.Fatalf("permissions %+v", p)
	}
	w.cfg.AuthorizedKeysFiles = []string{"none"}
	c, _ = startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
}
