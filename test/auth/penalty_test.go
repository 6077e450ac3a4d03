package auth_test

import (
	"context"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/penalty"
)

// A source that fails authentication is refused for the penalty's time
// while another source logs in (PerSourcePenalties authfail:20s, so that
// one failed connection is above min).
func TestPenaltyRefusesFailingSource(t *testing.T) {
	f := newFixture(t)
	good := f.keygen("good", "ed25519")
	stranger := f.keygen("stranger", "ed25519")
	ak := f.write("authorized_keys", f.read("good.pub"))
	cfg, err := penalty.ParsePenalties(penalty.Defaults(), []string{"authfail:20s", "min:1s"})
	if err != nil {
		t.Fatal(err)
	}
	tracker, err := penalty.New(&cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &sshtest.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := sshd.NewServer(&sshd.Config{Auth: &auth.Config{AuthorizedKeysFiles: []string{ak}, IgnoreFileModes: true, Logger: log},
		Logger: log, Conn: &connection.Config{}, Penalties: tracker})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	_, port, _ := net.SplitHostPort(l.Addr().String())
	from := func(src, key string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, f.ssh, "-F", "/dev/null", "-b", src, "-p", port, "-i", key, "-o", "IdentitiesOnly=yes",
			"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-l", f.user, "127.0.0.1", "true")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}
	if code, out := from("127.0.0.2", stranger); code != 255 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("wrong key from 127.0.0.2: exit %d: %s", code, out)
	}
	deadline := time.Now().Add(5 * time.Second) // the penalty lands when the server sees the close
	for len(tracker.Penalties()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if code, out := from("127.0.0.2", good); code == 0 {
		t.Fatalf("the penalised source logged in: %s\n%s", out, logs)
	}
	if code, out := from("127.0.0.3", good); code != 0 {
		t.Fatalf("another source was refused: exit %d: %s\n%s", code, out, logs)
	}
	if !strings.Contains(logs.String(), "drop connection #") || !strings.Contains(logs.String(), "penalty: failed authentication") {
		t.Errorf("log:\n%s", logs)
	}
	p := tracker.Penalties()
	if len(p) != 1 || p[0].Network.String() != "127.0.0.2/32" || !p[0].Active {
		t.Errorf("penalties %+v", p)
	}
}
