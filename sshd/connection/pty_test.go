package connection

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/wire"
)

func ptyPayload(term string, cols, rows uint32, modes []byte) []byte {
	b := wire.AppendString(nil, term)
	for _, v := range []uint32{cols, rows, 0, 0} {
		b = wire.AppendUint32(b, v)
	}
	return wire.AppendBytes(b, modes)
}

// waitOutput waits until the channel's stdout contains s.
func (ch *cchan) waitOutput(t *testing.T, s string) {
	t.Helper()
	if !testenv.WaitUntil(t, func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return strings.Contains(ch.stdout.String(), s)
	}) {
		t.Fatalf("output never contained %q", s)
	}
}

func TestPTYExec(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	modes := []byte{53, 0, 0, 0, 1, 72, 0, 0, 0, 1, 0} // ECHO on, ONLCR on, end
	if !ch.req("pty-req", true, ptyPayload("xterm-test", 100, 30, modes)) {
		t.Fatal("pty-req refused")
	}
	ch.exec(`tty; stty size; echo "T=$TERM S=$SSH_TTY"; exit 5`)
	ch.waitClosed(t)
	out := ch.stdout.String()
	for _, want := range []string{"/dev/pts/", "30 100", "T=xterm-test S=/dev/pts/"} {
		if !strings.Contains(out, want) {
			t.Errorf("pty output %q lacks %q", out, want)
		}
	}
	if ch.exitStatus != 5 {
		t.Errorf("exit status %d", ch.exitStatus)
	}
	c.checkFaults(t)
}

func TestPTYShell(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	ch.req("pty-req", true, ptyPayload("vt100", 80, 24, nil))
	if !ch.req("shell", true, nil) {
		t.Fatal("shell refused")
	}
	ch.write([]byte("stty size\n"))
	ch.waitOutput(t, "24 80")
	ch.req("window-change", false, ptyPayload("", 132, 50, nil)[4:20])
	ch.write([]byte("stty size\n"))
	ch.waitOutput(t, "50 132")
	ch.write([]byte("exit 4\n"))
	ch.waitClosed(t)
	if ch.exitStatus != 4 {
		t.Errorf("exit status %d, output %q", ch.exitStatus, ch.stdout.String())
	}
	c.checkFaults(t)
}

func TestPTYAbsurdSize(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	if ch.req("pty-req", true, ptyPayload("xterm", 1<<31, 1<<31, nil)) {
		t.Errorf("absurd pty size accepted")
	}
	if ch.req("pty-req", true, []byte{0, 0, 0, 9, 'x'}) {
		t.Errorf("malformed pty-req accepted")
	}
	if ch.req("pty-req", true, ptyPayload("xterm", 80, 24, []byte{1, 0, 0})) {
		t.Errorf("truncated terminal modes accepted")
	}
	// Huge window-change on a pty session is clamped, not fatal.
	ch.req("pty-req", true, ptyPayload("xterm", 80, 24, nil))
	ch.req("window-change", false, ptyPayload("", 0xffffffff, 0xffffffff, nil)[4:20])
	run := ch.exec("stty size")
	ch.waitClosed(t)
	if !run || !strings.Contains(ch.stdout.String(), "10000 10000") {
		t.Errorf("clamped size: output %q", ch.stdout.String())
	}
}

func TestNoPTYPermission(t *testing.T) {
	p := self(t)
	p.NoPTY = true
	c := startClient(t, nil, p)
	ch := c.session(t)
	if ch.req("pty-req", true, ptyPayload("xterm", 80, 24, nil)) {
		t.Errorf("pty granted despite no-pty")
	}
}

func TestParseModes(t *testing.T) {
	ms, err := parseModes([]byte{1, 0, 0, 0, 3, 53, 0, 0, 0, 0, 160, 9, 9})
	if err != nil || len(ms) != 2 || ms[0] != (termMode{1, 3}) || ms[1] != (termMode{53, 0}) {
		t.Errorf("parseModes = %v, %v", ms, err)
	}
}

// TestPTYModesApplied sends ECHO off and VINTR=^B and reads them back.
func TestPTYModesApplied(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	modes := []byte{53, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0} // ECHO 0, VINTR 2 (^B)
	ch.req("pty-req", true, ptyPayload("xterm", 80, 24, modes))
	ch.exec("stty -a")
	ch.waitClosed(t)
	out := ch.stdout.String()
	if !strings.Contains(out, "-echo ") || !strings.Contains(out, "intr = ^B") {
		t.Errorf("stty -a: %q", out)
	}
}

// TestPTYWithRC: with a pty, the rc file (or xauth for X11) runs before
// the program, and then the program runs: the copy of the rc's output
// must stop when the rc ends, though the session still holds the
// terminal open (pty.Open leaves the master in blocking mode, where a
// read deadline does nothing, and the session hung before the program).
func TestPTYWithRC(t *testing.T) {
	sys := filepath.Join(t.TempDir(), "sshrc")
	old := systemRC
	systemRC = sys
	defer func() { systemRC = old }()
	os.WriteFile(sys, []byte("echo system-rc\n"), 0o644)
	c := startClient(t, &Config{NoUserRC: true}, self(t))
	ch := c.session(t)
	if !ch.req("pty-req", true, ptyPayload("vt100", 80, 24, nil)) {
		t.Fatal("pty-req refused")
	}
	ch.exec("echo program; exit 3")
	ch.waitClosed(t)
	out := ch.stdout.String()
	if !strings.Contains(out, "system-rc") || !strings.Contains(out, "program") || ch.exitStatus != 3 {
		t.Fatalf("rc then program on a pty: output %q, exit status %d", out, ch.exitStatus)
	}
	c.checkFaults(t)
}
