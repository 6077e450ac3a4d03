package sshd

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestDetachKeep: a separated server detached in the middle of a
// transfer hands its session to a keeper (here in the same process),
// which signs the session's key re-exchanges (RekeyLimit) and relays its
// log lines; the data arrives intact; the detached server takes no new
// connection; the keeper's Wait returns when the client hangs up.
func TestDetachKeep(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	keys := []crypto.Signer{priv}
	f := newSeparatedWith(t, &Separation{Workers: 1, LogLevel: slog.LevelDebug}, func(c *Config) {
		c.RekeyLimit, c.HostKeys = 256<<10, keys
	})
	c := f.dial(t)
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := s.StdinPipe()
	stdout, _ := s.StdoutPipe()
	if err := s.Start("sha256sum"); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20)
	rand.Read(data)
	if _, err := stdin.Write(data[:1<<20]); err != nil {
		t.Fatal(err)
	}

	h, err := f.srv.Detach()
	if err != nil || h == nil || h.Conns != 1 {
		t.Fatalf("Detach: %+v, %v; want one connection handed over", h, err)
	}
	if _, err := f.srv.Detach(); err == nil {
		t.Error("a second Detach succeeded")
	}
	logs := &logBuffer{}
	m, err := Keep(&Config{HostKeys: keys, Separation: &Separation{LogLevel: slog.LevelDebug},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, h)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Sessions(); n != 1 {
		t.Fatalf("the keeper holds %d connections, want 1", n)
	}
	if handshakeOK(t, f.addr) {
		t.Error("the detached server still accepts connections")
	}

	if _, err := stdin.Write(data[1<<20:]); err != nil {
		t.Fatalf("writing after the hand-over: %v\nkeeper log:\n%s", err, logs.String())
	}
	stdin.Close()
	out, _ := io.ReadAll(stdout)
	if want := fmt.Sprintf("%x", sha256.Sum256(data)); !strings.HasPrefix(string(out), want) {
		t.Fatalf("sha256sum %q, want %s\nkeeper log:\n%s", out, want, logs.String())
	}
	s.Wait()
	c.Close()
	waited := make(chan struct{})
	go func() { m.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatalf("the keeper did not end with its last session:\n%s", logs.String())
	}
	// The post-auth process's lines came through the keeper: among them
	// the re-exchanges it signed.
	if !strings.Contains(logs.String(), "key exchange done") {
		t.Errorf("no key re-exchange logged through the keeper:\n%s", logs.String())
	}
}
