package connection

import (
	"errors"
	"io/fs"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestHeldPAMSession: Config.OpenHeldPAMSession is called once per
// connection, before its first program; every program is started through
// the session's Start with the session's umask; its environment comes
// before SetEnv; the session closes once, after Serve's end.
func TestHeldPAMSession(t *testing.T) {
	var opens, starts, closes atomic.Int32
	var masks atomic.Int32
	mask := fs.FileMode(0o027)
	open := func(user string) (*HeldPAMSession, error) {
		opens.Add(1)
		return &HeldPAMSession{Env: []string{"PAMVAR=from-session", "FOO=session"}, Umask: &mask,
			Start: func(c *exec.Cmd, umask fs.FileMode) error {
				starts.Add(1)
				masks.Store(int32(umask))
				old := syscall.Umask(int(umask))
				defer syscall.Umask(old)
				return c.Start()
			},
			Close: func() { closes.Add(1) }}, nil
	}
	c := startClient(t, &Config{OpenHeldPAMSession: open, SetEnv: []string{"FOO=setenv"}}, self(t))
	ch := run(t, c, "echo $PAMVAR $FOO; umask", nil)
	if got := ch.stdout.String(); got != "from-session setenv\n0027\n" {
		t.Errorf("session program printed %q", got)
	}
	run(t, c, "true", nil)
	if opens.Load() != 1 || starts.Load() != 2 || masks.Load() != 0o027 {
		t.Errorf("opens %d, starts %d, umask %#o; want 1, 2, 027", opens.Load(), starts.Load(), masks.Load())
	}
	if closes.Load() != 0 {
		t.Error("the session closed before the connection ended")
	}
	c.pc.Close()
	c.wait(t)
	if closes.Load() != 1 {
		t.Errorf("closed %d times after the connection, want 1", closes.Load())
	}
}

// TestHeldPAMSessionRefused: a session that cannot be opened refuses the
// program, and Close is never called for it.
func TestHeldPAMSessionRefused(t *testing.T) {
	open := func(string) (*HeldPAMSession, error) { return nil, errors.New("pam says no") }
	c := startClient(t, &Config{OpenHeldPAMSession: open}, self(t))
	ch := c.session(t)
	if ch.exec("true") {
		t.Fatal("a program started without its session")
	}
	c.checkFaults(t)
}
