package connection

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// waitFile waits until file f holds want, failing t at the startup
// deadline.
func waitFile(t *testing.T, f, want string) {
	t.Helper()
	var b []byte
	if !testenv.WaitUntil(t, func() bool { b, _ = os.ReadFile(f); return string(b) == want }) {
		t.Fatalf("%s holds %q, want %q: the program did not outlive its connection", f, b, want)
	}
}

// TestProgramOutlivesConnection drops the connection while a command
// without a pty runs. OpenSSH's sshd does not signal the program (it sees
// its streams close), so a job writing to a file finishes; offload used to
// send SIGHUP, then SIGKILL.
func TestProgramOutlivesConnection(t *testing.T) {
	c := startClient(t, nil, self(t))
	f := filepath.Join(t.TempDir(), "done")
	ch := c.session(t)
	ch.exec("echo started; sleep 1; echo finished >" + f)
	ch.waitOutput(t, "started")
	c.pc.Close()
	c.wait(t) // Serve returns without waiting for the program
	waitFile(t, f, "finished\n")
}

// TestPTYProgramOutlivesHangup drops the connection of a pty session. As
// with OpenSSH's sshd the terminal is hung up (the kernel's SIGHUP) and
// nothing more: a program that ignores SIGHUP finishes (offload used to
// send SIGKILL a second later).
func TestPTYProgramOutlivesHangup(t *testing.T) {
	c := startClient(t, nil, self(t))
	f := filepath.Join(t.TempDir(), "done")
	ch := c.session(t)
	if !ch.req("pty-req", true, ptyPayload("vt100", 80, 24, nil)) {
		t.Fatal("pty-req refused")
	}
	ch.exec("trap '' HUP; echo started; sleep 2; echo finished >" + f)
	ch.waitOutput(t, "started")
	c.pc.Close()
	c.wait(t)
	waitFile(t, f, "finished\n")
}

// TestPTYHangupEndsProgram: a pty program that keeps SIGHUP's default
// ends when the connection drops, as under OpenSSH's sshd.
func TestPTYHangupEndsProgram(t *testing.T) {
	// A child inherits an ignored SIGHUP, and go test may run under nohup
	// (a CI script's, and this test failed there). Handling the signal
	// here makes the program start with the default, as it does under
	// offload sshd, whose daemon handles SIGHUP (and OpenSSH's, which
	// resets it).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	if !ch.req("pty-req", true, ptyPayload("vt100", 80, 24, nil)) {
		t.Fatal("pty-req refused")
	}
	ch.exec(`echo "pid=$$."; exec sleep 86400`) // outlasts the deadline: only the hangup ends it
	ch.waitOutput(t, ".")
	ch.mu.Lock()
	out := ch.stdout.String()
	ch.mu.Unlock()
	var pid int
	if _, err := fmt.Sscanf(out[strings.Index(out, "pid="):], "pid=%d.", &pid); err != nil {
		t.Fatalf("no pid in %q: %v", out, err)
	}
	c.pc.Close()
	c.wait(t)
	if !testenv.WaitUntil(t, func() bool { return syscall.Kill(pid, 0) != nil }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d still runs after its terminal was hung up", pid)
	}
}
