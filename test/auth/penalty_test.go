package auth_test

import (
	"context"
	"log/slog"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/penalty"
)

// A source that fails authentication is refused for the penalty's time
// while another source logs in (PerSourcePenalties authfail:5m, so that
// one failed connection is above min, and the penalty outlasts the test
// however long a login takes on a loaded machine: with 20s a 60 s login
// let it expire before the last check).
func TestPenaltyRefusesFailingSource(t *testing.T) {
	f := newFixture(t)
	good := f.keygen("good", "ed25519")
	stranger := f.keygen("stranger", "ed25519")
	ak := f.write("authorized_keys", f.read("good.pub"))
	cfg, err := penalty.ParsePenalties(penalty.Defaults(), []string{"authfail:5m", "min:1s"})
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
		ctx, cancel := context.WithDeadline(context.Background(), testenv.StartupDeadline(t)) // a login's time is the machine's load
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
	testenv.WaitUntil(t, func() bool { return len(tracker.Penalties()) > 0 }) // the penalty lands when the server sees the close
	if code, out := from("127.0.0.2", good); code == 0 {
		t.Fatalf("the penalised source logged in: %s\n%s", out, logs)
	}
	if code, out := from("127.0.0.3", good); code != 0 {
		t.Fatalf("another source was refused: exit %d: %s\n%s", code, out, logs)
	}
	if !awaitLine(t, logs, "drop connection #") || !awaitLine(t, logs, "penalty: failed authentication") {
		t.Errorf("log:\n%s", logs)
	}
	p := tracker.Penalties()
	if len(p) != 1 || p[0].Network.String() != "127.0.0.2/32" || !p[0].Active {
		t.Errorf("penalties %+v", p)
	}
}

// The real program, under privilege separation (the monitor keeps the
// penalties): a source that fails authentication is refused while another
// logs in, and one source holding stalled connections beyond
// PerSourceMaxStartups does not stop another's login (the issue's ~90
// stalled connections that locked every login out).
func TestPenaltyDaemon(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-penalty-1")
	stranger := f.keygen("stranger", "ed25519")
	d := startOffloadDaemon(t, f, nil, nil, "PerSourcePenalties authfail:20s min:1s", "PerSourceMaxStartups 5",
		"MaxStartups 200", "LogLevel DEBUG") // DEBUG: the line that says a penalty is in force
	from := func(src, key string) (int, string) {
		ctx, cancel := context.WithDeadline(context.Background(), testenv.StartupDeadline(t))
		defer cancel()
		cmd := exec.CommandContext(ctx, f.ssh, append([]string{"-b", src, "-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"},
			sshArgs(d.port, u.Username)...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}
	// stalled connections from 127.0.0.4: they never send a byte
	var stalled []net.Conn
	defer func() {
		for _, c := range stalled {
			c.Close()
		}
	}()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 4)}, Timeout: 5 * time.Second}
	for i := 0; i < 90; i++ {
		c, err := dialer.Dial("tcp", "127.0.0.1:"+d.port)
		if err != nil {
			t.Fatalf("stalled connection %d: %v", i, err)
		}
		stalled = append(stalled, c)
	}
	if code, out := from("127.0.0.3", u.key); code != 0 {
		t.Fatalf("a login beside 90 stalled connections of another source: exit %d: %s\n%s", code, out, d.stderr)
	}
	dropped := regexp.MustCompile(`drop connection #\d+ from \[127\.0\.0\.4\]:\d+ on \[127\.0\.0\.1\]:\d+ PerSourceMaxStartups`)
	testenv.WaitUntil(t, func() bool { return len(dropped.FindAllString(d.stderr.String(), -1)) >= 85 })
	if n := len(dropped.FindAllString(d.stderr.String(), -1)); n != 85 {
		t.Errorf("%d of 90 stalled connections dropped past PerSourceMaxStartups 5, want 85:\n%s", n, d.stderr)
	}

	if code, out := from("127.0.0.2", stranger); code != 255 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("wrong key from 127.0.0.2: exit %d: %s", code, out)
	}
	if !d.stderr.Await(t, "127.0.0.2/32 active penalty") { // it lands when the server sees the close
		t.Fatalf("no penalty for 127.0.0.2:\n%s", d.stderr)
	}
	if code, out := from("127.0.0.2", u.key); code == 0 {
		t.Fatalf("the penalised source logged in: %s\n%s", out, d.stderr)
	}
	if code, out := from("127.0.0.3", u.key); code != 0 {
		t.Fatalf("another source was refused: exit %d: %s\n%s", code, out, d.stderr)
	}
	if !awaitLine(t, d.stderr, "penalty: failed authentication") {
		t.Errorf("log:\n%s", d.stderr)
	}
}

// RefuseConnection in a Match block penalises the source it refuses
// (OpenSSH 10's refuseconnection penalty): its next connection is dropped
// at accept, in OpenSSH's words, while another source logs in.
func TestPenaltyRefuseConnection(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-refuse-1")
	d := startOffloadDaemon(t, f, nil, nil, "PerSourcePenalties refuseconnection:20s min:1s", "LogLevel DEBUG",
		"Match Address 127.0.0.5", "RefuseConnection yes")
	from := func(src string) string {
		return runOutcome(t, nil, f.ssh, append([]string{"-b", src, "-i", u.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"},
			sshArgs(d.port, u.Username)...)...)
	}
	if got := from("127.0.0.5"); got == "ok" {
		t.Fatalf("RefuseConnection let 127.0.0.5 in")
	}
	active := regexp.MustCompile(`127\.0\.0\.5/32.* penalty of .* penalty: connection prohibited by RefuseConnection`)
	if awaitLog(t, d.stderr, active) == "" {
		t.Fatalf("no refuseconnection penalty:\n%s", d.stderr)
	}
	if got := from("127.0.0.5"); got == "ok" {
		t.Fatal("the penalised source logged in")
	}
	drop := regexp.MustCompile(`drop connection #\d+ from \[127\.0\.0\.5\]:\d+ on \[127\.0\.0\.1\]:\d+ penalty: connection prohibited by RefuseConnection`)
	if awaitLog(t, d.stderr, drop) == "" {
		t.Errorf("the second connection was not dropped at accept:\n%s", d.stderr)
	}
	if got := from("127.0.0.3"); got != "ok" {
		t.Fatalf("another source: %s\n%s", got, d.stderr)
	}
}
