package connection

import (
	"bytes"
	"fmt"
	"os/user"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// self returns permissions for the user running the tests.
func self(t testing.TB) *perm.Permissions {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Skipf("no current user: %v", err)
	}
	return &perm.Permissions{User: u.Username}
}

// run execs cmd with stdin and returns the finished channel.
func run(t *testing.T, c *client, cmd string, stdin []byte) *cchan {
	t.Helper()
	ch := c.session(t)
	if !ch.exec(cmd) {
		t.Fatalf("exec %q refused", cmd)
	}
	if stdin != nil {
		ch.write(stdin)
	}
	ch.sendEOF()
	ch.waitClosed(t)
	return ch
}

func TestExecStdoutStderrStatus(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := run(t, c, "echo out; echo err >&2; exit 3", nil)
	if got := ch.stdout.String(); got != "out\n" {
		t.Errorf("stdout %q", got)
	}
	if got := ch.stderr.String(); got != "err\n" {
		t.Errorf("stderr %q", got)
	}
	if ch.exitStatus != 3 {
		t.Errorf("exit status %d, want 3", ch.exitStatus)
	}
	// Output, then exit-status, EOF, CLOSE.
	tail := ch.order[len(ch.order)-3:]
	if !slices.Equal(tail, []string{"exit", "eof", "close"}) {
		t.Errorf("event order %v, want ... exit eof close", ch.order)
	}
	c.checkFaults(t)
}

func TestExecStdinRoundTrip(t *testing.T) {
	c := startClient(t, nil, self(t))
	in := bytes.Repeat([]byte("hello, world\n"), 10000)
	ch := run(t, c, "cat", in)
	if !bytes.Equal(ch.stdout.Bytes(), in) {
		t.Errorf("cat returned %d bytes, want %d", ch.stdout.Len(), len(in))
	}
	if ch.exitStatus != 0 {
		t.Errorf("exit status %d", ch.exitStatus)
	}
	c.checkFaults(t)
}

func TestExecEnvironment(t *testing.T) {
	c := startClient(t, &Config{AcceptEnv: []string{"LC_*", "FOO"}}, self(t))
	ch := c.session(t)
	env := func(k, v string) bool {
		return ch.req("env", true, wire.AppendString(wire.AppendString(nil, k), v))
	}
	if !env("LC_ALL", "C") || !env("FOO", "bar") {
		t.Errorf("accepted variable refused")
	}
	if env("LD_PRELOAD", "/tmp/x.so") || env("BAR", "x") {
		t.Errorf("variable outside AcceptEnv accepted")
	}
	if env("FOO", strings.Repeat("x", maxEnvValue+1)) {
		t.Errorf("huge value accepted")
	}
	ch.exec("echo $LC_ALL $FOO $USER $HOME; echo ${LD_PRELOAD:-unset}; echo $SSH_CONNECTION")
	ch.sendEOF()
	ch.waitClosed(t)
	lines := strings.Split(ch.stdout.String(), "\n")
	u := self(t).User
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "C bar "+u+" ") || lines[1] != "unset" {
		t.Errorf("environment output %q", ch.stdout.String())
	}
	c.checkFaults(t)
}

func TestEnvCountBounded(t *testing.T) {
	c := startClient(t, &Config{AcceptEnv: []string{"*"}}, self(t))
	ch := c.session(t)
	refused := 0
	for i := range maxEnvVars + 5 {
		if !ch.req("env", true, wire.AppendString(wire.AppendString(nil, "V"+strings.Repeat("x", i)), "1")) {
			refused++
		}
	}
	if refused != 5 {
		t.Errorf("%d variables refused, want 5", refused)
	}
	c.checkFaults(t)
}

func TestForcedCommand(t *testing.T) {
	p := self(t)
	p.ForceCommand = "echo forced: $SSH_ORIGINAL_COMMAND"
	c := startClient(t, nil, p)
	ch := run(t, c, "echo asked", nil)
	if got := ch.stdout.String(); got != "forced: echo asked\n" {
		t.Errorf("stdout %q", got)
	}
}

func TestSignalTerm(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	ch.exec("exec sleep 30")
	ch.req("signal", false, wire.AppendString(nil, "TERM"))
	ch.waitClosed(t)
	if ch.exitSignal != "TERM" {
		t.Errorf("exit-signal %q (status %d), want TERM", ch.exitSignal, ch.exitStatus)
	}
	c.checkFaults(t)
}

func TestConcurrentSessions(t *testing.T) {
	c := startClient(t, nil, self(t))
	chans := make([]*cchan, 8)
	for i := range chans {
		chans[i] = c.session(t)
		if !chans[i].exec("head -c 100000 /dev/zero | tr '\\0' x; exit 7") {
			t.Fatal("exec refused")
		}
		chans[i].sendEOF()
	}
	for _, ch := range chans {
		ch.waitClosed(t)
		if ch.stdout.Len() != 100000 || ch.exitStatus != 7 {
			t.Errorf("channel %d: %d bytes, status %d", ch.id, ch.stdout.Len(), ch.exitStatus)
		}
	}
	c.checkFaults(t)
}

func TestMaxSessions(t *testing.T) {
	c := startClient(t, &Config{MaxSessions: 2}, self(t))
	first := c.session(t)
	c.session(t)
	if _, err := c.open("session", 1<<20, 32768, nil); err == nil {
		t.Errorf("third session opened with MaxSessions 2")
	}
	// Closing one frees its slot once both sides have closed.
	first.closeBack() // send our CLOSE first
	first.waitClosed(t)
	var err error
	for range 50 {
		if _, err = c.open("session", 1<<20, 32768, nil); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("no session after one closed: %v", err)
	}
}

func TestSecondExecRefused(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	if !ch.exec("sleep 0.2") {
		t.Fatal("exec refused")
	}
	if ch.exec("true") {
		t.Errorf("second exec accepted")
	}
	ch.sendEOF()
	ch.waitClosed(t)
}

// TestEnvBurst sends many env requests without waiting, as OpenSSH does
// with SendEnv=*: none may overflow the request queue.
func TestEnvBurst(t *testing.T) {
	c := startClient(t, &Config{AcceptEnv: []string{"B*"}}, self(t))
	ch := c.session(t)
	for i := range 200 {
		ch.req("env", false, wire.AppendString(wire.AppendString(nil, fmt.Sprintf("B%d", i)), "v"))
	}
	out := run2(t, ch, "echo $B0 $B63")
	if out != "v v\n" {
		t.Errorf("output %q", out)
	}
	c.checkFaults(t)
}

// run2 execs on an open channel and returns stdout.
func run2(t *testing.T, ch *cchan, cmd string) string {
	t.Helper()
	if !ch.exec(cmd) {
		t.Fatalf("exec %q refused", cmd)
	}
	ch.sendEOF()
	ch.waitClosed(t)
	return ch.stdout.String()
}

// TestStderrAfterStdoutEOF: stderr written after stdout closed still
// arrives before exit-status, EOF and CLOSE.
func TestStderrAfterStdoutEOF(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := run(t, c, "echo out; exec 1>&-; sleep 0.1; echo late >&2; exit 2", nil)
	if ch.stdout.String() != "out\n" || ch.stderr.String() != "late\n" || ch.exitStatus != 2 {
		t.Errorf("stdout %q stderr %q status %d", ch.stdout.String(), ch.stderr.String(), ch.exitStatus)
	}
	if n := len(ch.order); n < 3 || !slices.Equal(ch.order[n-3:], []string{"exit", "eof", "close"}) {
		t.Errorf("order %v", ch.order)
	}
	c.checkFaults(t)
}
