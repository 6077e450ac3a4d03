package auth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

// world is a user "alice" (and "root") with a home directory in a temp
// dir and a Config that looks them up there.
type world struct {
	t    testing.TB
	home string
	cfg  *Config
	logs *bytes.Buffer
}

func newWorld(t testing.TB) *world {
	t.Helper()
	home := homeDir(t)
	if err := os.Mkdir(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, home: home, logs: &bytes.Buffer{}}
	w.own(filepath.Join(home, ".ssh"))
	w.cfg = &Config{
		LookupUser: w.lookup,
		Logger:     slog.New(slog.NewTextHandler(&lockedWriter{w: w.logs}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	return w
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// uid is the uid alice gets: the test's own, so files it makes are hers,
// or 1000 when the tests run as root (files owned by root are fine too).
var uid = func() string {
	if os.Getuid() == 0 {
		return "1000"
	}
	return fmt.Sprint(os.Getuid())
}()

func (w *world) lookup(name string) (*user.User, error) {
	switch name {
	case "alice":
		return &user.User{Username: "alice", Uid: uid, Gid: uid, HomeDir: w.home}, nil
	case "root":
		return &user.User{Username: "root", Uid: "0", Gid: "0", HomeDir: w.home}, nil
	case "bob":
		return &user.User{Username: "bob", Uid: uid, Gid: uid, HomeDir: w.home}, nil
	}
	return nil, user.UnknownUserError(name)
}

// authorize writes lines to ~/.ssh/authorized_keys.
func (w *world) authorize(lines ...string) {
	w.t.Helper()
	w.writeFile(".ssh/authorized_keys", strings.Join(lines, "\n")+"\n", 0o600)
}

func (w *world) writeFile(rel, data string, mode os.FileMode) string {
	w.t.Helper()
	p := filepath.Join(w.home, rel)
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		w.t.Fatal(err)
	}
	w.own(p)
	return p
}

// homeDir is alice's home: under tests run as root it is hers (uid
// 1000), in a directory she may enter, since her files are read with her
// permissions.
func homeDir(t testing.TB) string {
	if os.Getuid() != 0 {
		return t.TempDir()
	}
	base, err := os.MkdirTemp("", "auth-home")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	home := filepath.Join(base, "alice")
	os.Mkdir(home, 0o755)
	os.Chown(home, 1000, 1000)
	return home
}

// ownBy gives the home, ~/.ssh and authorized_keys to uid when the tests
// run as root.
func (w *world) ownBy(uid int) {
	if os.Getuid() == 0 {
		for _, p := range []string{w.home, filepath.Join(w.home, ".ssh"), filepath.Join(w.home, ".ssh/authorized_keys")} {
			os.Lchown(p, uid, uid)
		}
	}
}

// own gives p to alice when the tests run as root.
func (w *world) own(p string) {
	if os.Getuid() == 0 {
		os.Lchown(p, 1000, 1000)
	}
}

func (w *world) logged(s string) bool {
	return strings.Contains(w.logs.String(), s)
}

var (
	keyOnce sync.Once
	rsaKey  *rsa.PrivateKey
)

// newEd25519 returns a fresh Ed25519 signer.
func newEd25519(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rsaSigner returns an RSA-2048 signer, made once per test binary.
func rsaSigner(t *testing.T) ssh.Signer {
	t.Helper()
	keyOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	s, err := ssh.NewSignerFromKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// authLine is the authorized_keys form of a key, with options.
func authLine(opts string, pub ssh.PublicKey) string {
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	if opts == "" {
		return line
	}
	return opts + " " + line
}

// parseKeyForTest offers an RSA key of bits to the default settings.
func parseKeyForTest(t *testing.T, bits int) (ssh.PublicKey, error) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := newSettings(nil).parseKey("rsa-sha2-256", pub.Marshal())
	return key, err
}
