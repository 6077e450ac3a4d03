// Package harness runs an in-process offload SSH server on 127.0.0.1 for
// the hostile-client, load and scanner tests, and measures what those
// tests assert: goroutines, heap, and a healthy session that must keep
// transferring while others misbehave.
//
// # Server
//
// Start builds a sshd.Server with the software and CPU providers, an
// ephemeral Ed25519 host key and one authorized client key for the user
// running the tests, listening on 127.0.0.1:0. Its log goes to a bounded
// buffer that is printed when the test fails.
//
// # Healthy session
//
// StartStream logs in with golang.org/x/crypto/ssh, runs `cat` and keeps
// sending a deterministic pseudo-random stream through it, comparing
// every byte that comes back; Stop compares SHA-256 sums of everything
// sent and received.
//
// # Measurements
//
// Goroutines, SettleGoroutines, HeapInUse and HeapSampler are the
// leak and memory checks; they use runtime counters only.
package harness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/transport"
)

// Server is a running in-process server.
type Server struct {
	Srv    *sshd.Server
	Addr   string
	User   string
	Signer ssh.Signer // an authorized client key
	Log    *LogBuffer
}

var (
	keyOnce   sync.Once
	clientKey ssh.Signer
)

// ClientKey returns the Ed25519 client key every harness server authorizes.
func ClientKey(t testing.TB) ssh.Signer {
	keyOnce.Do(func() {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		if clientKey, err = ssh.NewSignerFromSigner(k); err != nil {
			panic(err)
		}
	})
	return clientKey
}

// Registry returns a registry of the software and CPU providers.
func Registry(t testing.TB) *provider.Registry {
	t.Helper()
	reg := provider.New(provider.Config{})
	for _, p := range []provider.Provider{cpu.New(cpu.Detect()), software.New()} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// Start runs a server on 127.0.0.1:0 until the test ends. mutate, when
// not nil, adjusts the configuration before the server is made.
func Start(t testing.TB, mutate func(*sshd.Config)) *Server {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	s := &Server{User: u.Username, Signer: ClientKey(t), Log: &LogBuffer{}}
	cfg := &sshd.Config{
		Registry: Registry(t),
		MACs:     transport.SupportedMACs(), // cover the encrypt-and-MAC ones too
		Auth:     authConfig(t, s.Signer),
		Conn:     &connection.Config{AcceptEnv: []string{"SHLVL"}},
		Logger:   slog.New(slog.NewTextHandler(s.Log, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if os.Getenv("OFFLOAD_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if mutate != nil {
		mutate(cfg)
	}
	if s.Srv, err = sshd.NewServer(cfg); err != nil {
		t.Fatalf("sshd.NewServer: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = l.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Srv.Serve(l)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Srv.Shutdown(ctx)
		<-done
		if t.Failed() {
			t.Logf("server log (last %d bytes):\n%s", logKeep, s.Log.String())
		}
	})
	return s
}

func authConfig(t testing.TB, key ssh.Signer) *auth.Config {
	dir := t.TempDir()
	path := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(path, ssh.MarshalAuthorizedKey(key.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	return &auth.Config{
		AuthorizedKeysFiles: []string{path},
		IgnoreFileModes:     true,
		Logger:              slog.New(slog.DiscardHandler),
	}
}

// ClientConfig is an x/crypto/ssh client configuration that logs in to s.
func (s *Server) ClientConfig() *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.Signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Timeout:         10 * time.Second,
	}
}

// NewSession opens a session that sets SHLVL=1. bash sources ~/.bashrc
// when started by sshd at shell level 1; a developer's ~/.bashrc (pyenv
// init, say) then costs seconds per exec. SHLVL=1 makes bash's level 2,
// so it does not, and the tests measure the server rather than the
// account's shell start-up. The server accepts SHLVL (AcceptEnv).
func NewSession(c *ssh.Client) (*ssh.Session, error) {
	s, err := c.NewSession()
	if err != nil {
		return nil, err
	}
	if err := s.Setenv("SHLVL", "1"); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Dial logs in with x/crypto/ssh.
func (s *Server) Dial() (*ssh.Client, error) {
	return ssh.Dial("tcp", s.Addr, s.ClientConfig())
}

// logKeep is how much of the server log LogBuffer keeps.
const logKeep = 64 << 10

// LogBuffer keeps the last logKeep bytes written to it, and counts the
// records that report a recovered panic.
type LogBuffer struct {
	mu     sync.Mutex
	buf    []byte
	panics int
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bytes.Contains(p, []byte("panic")) {
		b.panics++
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*logKeep {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-logKeep:]...)
	}
	return len(p), nil
}

// String returns the kept log.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) > logKeep {
		return string(b.buf[len(b.buf)-logKeep:])
	}
	return string(b.buf)
}

// Panics returns how many log records so far mention a panic (the server
// recovers a panic in one connection and logs it).
func (b *LogBuffer) Panics() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.panics
}

// Contains reports whether the kept log contains s.
func (b *LogBuffer) Contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Contains(b.buf, []byte(s))
}
