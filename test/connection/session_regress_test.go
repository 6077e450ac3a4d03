package connection_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/connection"
)

// startAgent runs ssh-agent on a socket of its own with the fixture's
// key added, and returns the socket.
func startAgent(t *testing.T, f *fixture) string {
	t.Helper()
	add := testenv.LookPath(t, "ssh-add", "apt-get install openssh-client")
	sock := filepath.Join(t.TempDir(), "agent.sock")
	sshtest.SSHAgent(t, sock)
	if out, err := runTool(t, []string{"SSH_AUTH_SOCK=" + sock}, add, f.key); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	return sock
}

// TestAgentForwarding ports OpenSSH's agent test: with ssh -A the remote
// ssh-add lists the local agent's key through a socket in a private
// directory, which is gone when the connection ends; without -A, or with
// AllowAgentForwarding no, there is no agent.
func TestAgentForwarding(t *testing.T) {
	f := newFixture(t, nil)
	sock := startAgent(t, f)
	env := []string{"SSH_AUTH_SOCK=" + sock}
	list, _ := runTool(t, env, "ssh-add", "-l")
	out, errOut, code := f.ssh(t, nil, env, "-A", `ssh-add -l; echo "$SSH_AUTH_SOCK"; stat -c %a "$(dirname "$SSH_AUTH_SOCK")"`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || lines[0] != strings.TrimSpace(list) || lines[2] != "700" {
		t.Fatalf("ssh -A: %q (stderr %q, code %d); local agent lists %q", out, errOut, code, list)
	}
	gone := func() bool { // the server cleans up once it sees the disconnect
		_, err := os.Stat(filepath.Dir(lines[1]))
		return os.IsNotExist(err)
	}
	if !testenv.WaitUntil(t, gone) {
		t.Errorf("agent socket directory of %s left after the connection", lines[1])
	}
	if out, _, _ := f.ssh(t, nil, env, `echo "${SSH_AUTH_SOCK-none}"`); out != "none\n" {
		t.Errorf("without -A: SSH_AUTH_SOCK %q", out)
	}
	g := newFixtureSharing(t, f, &connection.Config{NoAgentForwarding: true})
	if out, _, _ := g.ssh(t, nil, env, "-A", `echo "${SSH_AUTH_SOCK-none}"`); out != "none\n" {
		t.Errorf("AllowAgentForwarding no: SSH_AUTH_SOCK %q", out)
	}
	f.setKeyOptions(t, "no-agent-forwarding")
	if out, _, _ := f.ssh(t, nil, env, "-A", `echo "${SSH_AUTH_SOCK-none}"`); out != "none\n" {
		t.Errorf("no-agent-forwarding: SSH_AUTH_SOCK %q", out)
	}
}

// TestChannelTimeoutLikeOpenSSH ports OpenSSH's channel-timeout test: an
// idle session is closed after its ChannelTimeout, a busy one is not, and
// the client sees the same as with OpenSSH's server.
func TestChannelTimeoutLikeOpenSSH(t *testing.T) {
	// OpenSSH 9.2 names sessions "session:command" etc.; OpenSSH 10
	// "session". offload answers to both. OpenSSH counts whole seconds,
	// so the timeout is 2s rather than 1s.
	f := newFixture(t, &connection.Config{ChannelTimeouts: []connection.ChannelTimeout{{Type: "session:*", Timeout: 2 * time.Second}}})
	ref := f.reference(t, "ChannelTimeout session:*=2s")
	for _, srv := range []*fixture{f, ref} {
		// The session must start and be closed before its command ends
		// (no "done"): no bound on time, which would also pass a connection
		// that failed, and fail a login that a slow machine made wait.
		out, _, code := srv.ssh(t, nil, nil, "echo started; sleep 8; echo done")
		if out != "started\n" {
			t.Errorf("port %s: idle session printed %q (code %d), want it closed after its 2s, before its command ended", srv.port, out, code)
		}
		out, _, code = srv.ssh(t, nil, nil, "for i in 1 2 3 4 5 6; do echo tick; sleep 0.4; done")
		if out != strings.Repeat("tick\n", 6) || code != 0 {
			t.Errorf("port %s: busy session: %q %d", srv.port, out, code)
		}
	}
}

// TestUnusedConnectionTimeout ports OpenSSH's connection-timeout test: a
// ControlMaster with no sessions is closed after UnusedConnectionTimeout,
// one with a session is not.
func TestUnusedConnectionTimeout(t *testing.T) {
	f := newFixture(t, &connection.Config{UnusedConnectionTimeout: time.Second})
	ctl := filepath.Join(t.TempDir(), "ctl")
	b := f.sshBackground(t, nil, "-N", "-M", "-S", ctl, "-o", "ControlPersist=no", "")
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case <-done:
	case <-testenv.Timeout(t):
		t.Fatal("an unused master connection was not closed")
	}
	// With a session open past the timeout, the connection stays.
	out, _, code := f.ssh(t, nil, nil, "sleep 2; echo kept")
	if out != "kept\n" || code != 0 {
		t.Errorf("busy connection: %q %d", out, code)
	}
}

// TestX11Forwarding ports OpenSSH's x11 test: with ssh -Y an X client on
// the server reaches the client's X server (Xvfb) through the forwarded
// display, whose cookie xauth installed.
func TestX11Forwarding(t *testing.T) {
	xvfb := testenv.LookPath(t, "Xvfb", "apt-get install xvfb")
	xauth := testenv.LookPath(t, "xauth", "apt-get install xauth")
	xdpyinfo := testenv.LookPath(t, "xdpyinfo", "apt-get install x11-utils")
	dir := t.TempDir()
	clientAuth := filepath.Join(dir, "client.Xauthority")
	cookie := make([]byte, 16)
	rand.Read(cookie)
	display := testenv.StartXvfb(t, xvfb, xauth, clientAuth, hex.EncodeToString(cookie))
	serverAuth := filepath.Join(dir, "server.Xauthority")
	off := 40
	f := newFixture(t, &connection.Config{X11Forwarding: true, XAuthLocation: xauth, X11DisplayOffset: &off,
		SetEnv: []string{"XAUTHORITY=" + serverAuth}})
	env := []string{"DISPLAY=" + display, "XAUTHORITY=" + clientAuth}
	out, errOut, code := f.ssh(t, nil, env, "-Y", `echo "$DISPLAY"; `+xdpyinfo+` | grep "^name of display"`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "localhost:") {
		t.Fatalf("ssh -Y: %q (stderr %q, code %d)", out, errOut, code)
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(lines[0], "localhost:"), ".0"))
	if n < off || !strings.Contains(lines[1], lines[0]) {
		t.Errorf("display %q, xdpyinfo %q", lines[0], lines[1])
	}
	list, _ := runTool(t, []string{"XAUTHORITY=" + serverAuth}, xauth, "list")
	if !strings.Contains(list, "unix:"+strconv.Itoa(n)) || !strings.Contains(list, "MIT-MAGIC-COOKIE-1") {
		t.Errorf("server xauth list %q", list)
	}
	// With a terminal too (ssh -Y -tt): xauth runs on the pty before the
	// program, which must then run (the session hung here before).
	out, errOut, code = f.ssh(t, nil, env, "-Y", "-tt", `echo "X=$DISPLAY"`)
	if code != 0 || !strings.Contains(out, "X=localhost:") {
		t.Errorf("ssh -Y -tt: %q (stderr %q, code %d)", out, errOut, code)
	}
	// Without X11Forwarding the request is refused; the session runs.
	g := newFixtureSharing(t, f, &connection.Config{})
	out, _, _ = g.ssh(t, nil, env, "-Y", `echo "${DISPLAY-none}"`)
	if out != "none\n" {
		t.Errorf("X11Forwarding no: DISPLAY %q", out)
	}
}
