package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// These tests set the session, X11 and forwarding keywords in an
// sshd_config, start offload sshd on it (as root: the separated mode,
// whose post-auth process runs as a throwaway user) and check with the
// OpenSSH client what a user sees. Each daemon listens on several ports;
// "Match LocalPort" blocks give the ports their own settings, so the
// tests also show the keywords apply per connection.

// testUser is a throwaway account the OpenSSH client's key logs in to.
type testUser struct {
	name, home string
	uid, gid   int
	cl         *opensshClient
}

// newTestUser creates the account with cl's key in its
// ~/.ssh/authorized_keys (owned by it, as StrictModes wants).
func newTestUser(t *testing.T, cl *opensshClient) *testUser {
	t.Helper()
	u := testenv.NewUser(t)
	testenv.Run(t, "usermod", "-p", "*", u.Username) // no password, not locked ("!")
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	tu := &testUser{name: u.Username, home: u.HomeDir, uid: uid, gid: gid}
	c := *cl
	c.user = u.Username
	tu.cl = &c
	key, err := os.ReadFile(cl.authorizedKeys)
	if err != nil {
		t.Fatal(err)
	}
	tu.mkdir(t, ".ssh", 0o700)
	tu.write(t, ".ssh/authorized_keys", string(key), 0o600)
	return tu
}

func (u *testUser) path(rel string) string { return filepath.Join(u.home, rel) }

// write writes a file in the user's home, owned by the user.
func (u *testUser) write(t *testing.T, rel, text string, mode os.FileMode) {
	t.Helper()
	p := u.path(rel)
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
}

func (u *testUser) mkdir(t *testing.T, rel string, mode os.FileMode) {
	t.Helper()
	p := u.path(rel)
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
}

// background runs the OpenSSH client until the test ends (or it exits);
// the returned channel is closed when it has exited.
func (c *opensshClient) background(t *testing.T, addr string, opts ...string) <-chan struct{} {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	argv := append(append([]string{}, opts...), "-F", "/dev/null", "-i", c.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-o", "ConnectTimeout=10", "-p", port, "-l", c.user, host)
	cmd := exec.Command(c.ssh, argv...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	return done
}

// waitDial waits until network address addr accepts connections.
func waitDial(t *testing.T, network, addr string) {
	t.Helper()
	if !testenv.WaitUntil(t, func() bool {
		c, err := net.Dial(network, addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("nothing listens on %s %s", network, addr)
	}
}

// echoes reports whether a connection to addr echoes what it is sent.
func echoes(network, addr string) bool {
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	b := make([]byte, 5)
	_, err = io.ReadFull(c, b)
	return err == nil && string(b) == "ping\n"
}

// unixEchoServer serves an echo on a Unix socket at path that anyone may
// connect to.
func unixEchoServer(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o777)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
}

// startAgent runs ssh-agent with the client's key and returns its socket.
func startAgent(t *testing.T, cl *opensshClient) string {
	t.Helper()
	agent := testenv.LookPath(t, "ssh-agent", "apt-get install openssh-client")
	add := testenv.LookPath(t, "ssh-add", "apt-get install openssh-client")
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command(agent, "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitDial(t, "unix", sock)
	c := exec.Command(add, cl.key)
	c.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	return sock
}

// runEnv runs the client with extra environment variables.
func (c *opensshClient) runEnv(t *testing.T, env []string, addr string, opts []string, command ...string) (string, string, error) {
	t.Helper()
	withEnv := *c
	withEnv.env = env
	return withEnv.run(t, addr, "", nil, opts, command...)
}

// TestSessionKeywordsWithOpenSSH: X11Forwarding (with X11DisplayOffset and
// XAuthLocation, through Xvfb), AllowAgentForwarding, PermitTTY, SetEnv,
// PermitUserEnvironment (a pattern list, for ~/.ssh/environment and the
// key's environment=) and PermitUserRC, each on one port and turned off on
// the other by Match LocalPort.
func TestSessionKeywordsWithOpenSSH(t *testing.T) {
	xvfb := testenv.LookPath(t, "Xvfb", "apt-get install xvfb")
	xauth := testenv.LookPath(t, "xauth", "apt-get install xauth")
	xdpyinfo := testenv.LookPath(t, "xdpyinfo", "apt-get install x11-utils")
	u := newTestUser(t, newOpenSSHClient(t))
	ports := freePorts(t, 2)
	cfg := writeConfig(t, fmt.Sprintf(`ListenAddress 127.0.0.1:%d
ListenAddress 127.0.0.1:%d
X11Forwarding yes
X11DisplayOffset 60
XAuthLocation %s
SetEnv OFFLOAD_SET=global
PermitUserEnvironment OFFLOAD_*
Match LocalPort %d
	PermitTTY no
	X11Forwarding no
	AllowAgentForwarding no
	SetEnv OFFLOAD_SET=matched
	PermitUserRC no
`, ports[0], ports[1], xauth, ports[1]))
	startTestDaemon(t, cfg)
	open, restricted := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])

	// X11: ssh -Y reaches the client's X server through the forwarded
	// display, numbered from X11DisplayOffset; xauth installed the cookie.
	dir := t.TempDir()
	clientAuth := filepath.Join(dir, "client.Xauthority")
	cookie := make([]byte, 16)
	rand.Read(cookie)
	display := testenv.StartXvfb(t, xvfb, xauth, clientAuth, hex.EncodeToString(cookie))
	xenv := []string{"DISPLAY=" + display, "XAUTHORITY=" + clientAuth}
	out, stderr, err := u.cl.runEnv(t, xenv, open, []string{"-Y"}, `echo "$DISPLAY"; `+xdpyinfo+` | grep "^name of display"; `+xauth+` list`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) < 3 || !strings.HasPrefix(lines[0], "localhost:") {
		t.Fatalf("ssh -Y: %q %q %v", out, stderr, err)
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(lines[0], "localhost:"), ".0"))
	if n < 60 || !strings.Contains(lines[1], lines[0]) || !strings.Contains(out, "unix:"+strconv.Itoa(n)) {
		t.Errorf("ssh -Y: display %d (X11DisplayOffset 60), output %q", n, out)
	}
	if out, _, _ := u.cl.runEnv(t, xenv, restricted, []string{"-Y"}, `echo "${DISPLAY-none}"`); out != "none\n" {
		t.Errorf("X11Forwarding no in Match: DISPLAY %q", out)
	}

	// Agent forwarding: the remote ssh-add lists the local agent's key.
	sock := startAgent(t, u.cl)
	aenv := []string{"SSH_AUTH_SOCK=" + sock}
	out, stderr, err = u.cl.runEnv(t, aenv, open, []string{"-A"}, `ssh-add -l; stat -c %U "$SSH_AUTH_SOCK"`)
	if err != nil || !strings.Contains(out, "ED25519") || !strings.HasSuffix(out, u.name+"\n") {
		t.Errorf("ssh -A: %q %q %v", out, stderr, err)
	}
	if out, _, _ := u.cl.runEnv(t, aenv, restricted, []string{"-A"}, `echo "${SSH_AUTH_SOCK-none}"`); out != "none\n" {
		t.Errorf("AllowAgentForwarding no in Match: SSH_AUTH_SOCK %q", out)
	}

	// PermitTTY no: the client is told, the command runs without one.
	// PrintMotd yes (the default): an interactive login (a shell on a
	// terminal) shows the motd first.
	out, stderr, err = u.cl.run(t, open, "", strings.NewReader("tty\nexit\n"), []string{"-tt"})
	if err != nil || !strings.Contains(out, "/dev/pts/") {
		t.Errorf("ssh -tt: %q %q %v", out, stderr, err)
	}
	if first := motdLine(); first != "" && !strings.Contains(out, first) {
		t.Errorf("PrintMotd yes: no motd in %q", out)
	}
	// With -tt the OpenSSH client gives up, as it does with OpenSSH's sshd.
	out, stderr, _ = u.cl.run(t, restricted, "", nil, []string{"-tt", "-o", "LogLevel=INFO"}, "tty")
	if strings.Contains(out, "/dev/pts/") || !strings.Contains(stderr, "PTY allocation request failed") {
		t.Errorf("PermitTTY no in Match: %q %q", out, stderr)
	}

	// SetEnv, and PermitUserEnvironment's patterns for ~/.ssh/environment
	// and the key's environment= options.
	u.write(t, ".ssh/environment", "OFFLOAD_FILE=file\nOTHER_FILE=no\n", 0o600)
	key, _ := os.ReadFile(u.cl.authorizedKeys)
	u.write(t, ".ssh/authorized_keys", `environment="OFFLOAD_KEY=key",environment="OTHER_KEY=no" `+string(key), 0o600)
	show := `echo "$OFFLOAD_SET ${OFFLOAD_FILE-unset} ${OTHER_FILE-unset} ${OFFLOAD_KEY-unset} ${OTHER_KEY-unset}"`
	if out, stderr, err := u.cl.run(t, open, "", nil, nil, show); err != nil || out != "global file unset key unset\n" {
		t.Errorf("SetEnv and PermitUserEnvironment OFFLOAD_*: %q %q %v", out, stderr, err)
	}
	if out, _, _ := u.cl.run(t, restricted, "", nil, nil, show); out != "matched file unset key unset\n" {
		t.Errorf("SetEnv in Match: %q", out)
	}

	// PermitUserRC no: ~/.ssh/rc runs before the command on one port only.
	u.write(t, ".ssh/rc", "echo rc-ran\n", 0o644)
	if out, stderr, err := u.cl.run(t, open, "", nil, nil, "echo", "cmd"); err != nil || out != "rc-ran\ncmd\n" {
		t.Errorf("~/.ssh/rc: %q %q %v", out, stderr, err)
	}
	if out, _, _ := u.cl.run(t, restricted, "", nil, nil, "echo", "cmd"); out != "cmd\n" {
		t.Errorf("PermitUserRC no in Match: %q", out)
	}
}

// TestForwardingKeywordsWithOpenSSH: PermitOpen, PermitListen,
// GatewayPorts, AllowStreamLocalForwarding, StreamLocalBindMask and
// StreamLocalBindUnlink on one port and otherwise on another (Match
// LocalPort), with ChannelTimeout there; ForceCommand, DisableForwarding
// and UnusedConnectionTimeout on a third; ForceCommand internal-sftp -R on
// a fourth; PrintMotd no; and the key's permitlisten=.
func TestForwardingKeywordsWithOpenSSH(t *testing.T) {
	u := newTestUser(t, newOpenSSHClient(t))
	ports := freePorts(t, 10)
	echo, other := echoServer(t), echoServer(t)
	cfg := writeConfig(t, fmt.Sprintf(`ListenAddress 127.0.0.1:%[1]d
ListenAddress 127.0.0.1:%[2]d
ListenAddress 127.0.0.1:%[3]d
ListenAddress 127.0.0.1:%[4]d
PrintMotd no
PermitOpen %[5]s [%[8]s]:*
PermitListen %[6]d 127.0.0.2:%[7]d
GatewayPorts clientspecified
StreamLocalBindMask 0111
StreamLocalBindUnlink yes
Match LocalPort %[2]d
	PermitOpen none
	PermitListen any
	GatewayPorts no
	AllowStreamLocalForwarding no
	StreamLocalBindUnlink no
	ChannelTimeout session=2s
Match LocalPort %[3]d
	ForceCommand echo "forced:$SSH_ORIGINAL_COMMAND"
	DisableForwarding yes
	UnusedConnectionTimeout 2s
Match LocalPort %[4]d
	ForceCommand internal-sftp -R
`, ports[0], ports[1], ports[2], ports[3], echo, ports[4], ports[5], u.path("echo.sock")))
	startTestDaemon(t, cfg)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	open, restricted, forced, sftpOnly := addr(0), addr(1), addr(2), addr(3)
	exitOnFail := []string{"-o", "ExitOnForwardFailure=yes", "-N"}

	// PermitOpen: only the listed target.
	if out, stderr, err := u.cl.run(t, open, "", strings.NewReader("ping\n"), []string{"-W", echo}); err != nil || out != "ping\n" {
		t.Errorf("-W to the PermitOpen target: %q %q %v", out, stderr, err)
	}
	for _, c := range []struct{ addr, target, what string }{{open, other, "another target"}, {restricted, echo, "PermitOpen none"},
		{forced, echo, "DisableForwarding yes"}} {
		if out, stderr, err := u.cl.run(t, c.addr, "", strings.NewReader("ping\n"), []string{"-W", c.target}); err == nil || out != "" {
			t.Errorf("-W with %s: %q %q %v", c.what, out, stderr, err)
		}
	}

	// PermitListen: the listed port, on the loopback (ssh asks for
	// "localhost"); another port is refused.
	u.cl.background(t, open, append(exitOnFail, "-R", fmt.Sprintf("%d:%s", ports[4], echo))...)
	waitDial(t, "tcp", addr(4))
	if !echoes("tcp", addr(4)) {
		t.Errorf("-R %d (PermitListen) does not forward", ports[4])
	}
	if _, stderr, err := u.cl.run(t, open, "", nil, append(exitOnFail, "-R", fmt.Sprintf("%d:%s", ports[6], echo))); err == nil ||
		!strings.Contains(stderr, "remote port forwarding failed") {
		t.Errorf("-R %d (not in PermitListen): %q %v", ports[6], stderr, err)
	}
	// GatewayPorts clientspecified listens where the client asks; no
	// listens on the loopback whatever it asks.
	u.cl.background(t, open, append(exitOnFail, "-R", fmt.Sprintf("127.0.0.2:%d:%s", ports[5], echo))...)
	waitDial(t, "tcp", fmt.Sprintf("127.0.0.2:%d", ports[5]))
	if echoes("tcp", addr(5)) {
		t.Errorf("GatewayPorts clientspecified: -R 127.0.0.2:%d also listens on 127.0.0.1", ports[5])
	}
	u.cl.background(t, restricted, append(exitOnFail, "-R", fmt.Sprintf("127.0.0.2:%d:%s", ports[7], echo))...)
	waitDial(t, "tcp", addr(7))
	if echoes("tcp", fmt.Sprintf("127.0.0.2:%d", ports[7])) || !echoes("tcp", addr(7)) {
		t.Errorf("GatewayPorts no: -R 127.0.0.2:%d does not listen on the loopback only", ports[7])
	}

	// Unix sockets: -R creates the socket with StreamLocalBindMask over a
	// stale one (StreamLocalBindUnlink yes); -L reaches one
	// (direct-streamlocal) that PermitOpen lets through ([path]:*: a
	// restricting PermitOpen refuses every other socket, as OpenSSH 9.2's
	// does, see test/connection TestStreamLocalPermitLikeOpenSSH). Match
	// turns both off.
	stale := u.path("fwd.sock")
	if l, err := net.Listen("unix", stale); err == nil {
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close() // a socket file nobody listens on
	}
	os.Lchown(stale, u.uid, u.gid)
	u.cl.background(t, open, append(exitOnFail, "-R", stale+":"+echo)...)
	waitDial(t, "unix", stale)
	if fi, err := os.Stat(stale); err != nil || fi.Mode().Perm() != 0o666 || !echoes("unix", stale) {
		t.Errorf("-R %s: %v %v (want mode 0666 from StreamLocalBindMask 0111)", stale, fi.Mode(), err)
	}
	remoteSock := u.path("echo.sock")
	unixEchoServer(t, remoteSock)
	local := freePorts(t, 2)
	u.cl.background(t, open, append(exitOnFail, "-L", fmt.Sprintf("127.0.0.1:%d:%s", local[0], remoteSock))...)
	u.cl.background(t, restricted, append(exitOnFail, "-L", fmt.Sprintf("127.0.0.1:%d:%s", local[1], remoteSock))...)
	waitDial(t, "tcp", fmt.Sprintf("127.0.0.1:%d", local[0]))
	waitDial(t, "tcp", fmt.Sprintf("127.0.0.1:%d", local[1]))
	if !echoes("tcp", fmt.Sprintf("127.0.0.1:%d", local[0])) {
		t.Errorf("-L to %s does not forward", remoteSock)
	}
	if echoes("tcp", fmt.Sprintf("127.0.0.1:%d", local[1])) {
		t.Errorf("-L to %s forwards with AllowStreamLocalForwarding no", remoteSock)
	}
	if _, stderr, err := u.cl.run(t, restricted, "", nil, append(exitOnFail, "-R", u.path("other.sock")+":"+echo)); err == nil ||
		!strings.Contains(stderr, "remote port forwarding failed") {
		t.Errorf("-R of a socket with AllowStreamLocalForwarding no: %q %v", stderr, err)
	}

	// The key's permitlisten= applies with sshd_config's (any there).
	key, _ := os.ReadFile(u.cl.authorizedKeys)
	u.write(t, ".ssh/authorized_keys", fmt.Sprintf(`permitlisten="%d" %s`, ports[8], key), 0o600)
	u.cl.background(t, restricted, append(exitOnFail, "-R", fmt.Sprintf("%d:%s", ports[8], echo))...)
	waitDial(t, "tcp", addr(8))
	if _, stderr, err := u.cl.run(t, restricted, "", nil, append(exitOnFail, "-R", fmt.Sprintf("%d:%s", ports[9], echo))); err == nil ||
		!strings.Contains(stderr, "remote port forwarding failed") {
		t.Errorf("-R %d beside permitlisten=%d: %q %v", ports[9], ports[8], stderr, err)
	}
	u.write(t, ".ssh/authorized_keys", string(key), 0o600)

	// ChannelTimeout session=2s closes an idle session; PrintMotd no
	// prints no /etc/motd at a login with a terminal.
	start := time.Now()
	if out, _, _ := u.cl.run(t, restricted, "", nil, nil, "sleep 10; echo done"); strings.Contains(out, "done") {
		t.Errorf("ChannelTimeout session=2s: an idle session ran %v (%q)", time.Since(start), out)
	}
	if first := motdLine(); first != "" {
		if out, _, _ := u.cl.run(t, open, "", strings.NewReader("exit\n"), []string{"-tt"}); strings.Contains(out, first) {
			t.Errorf("PrintMotd no: the motd was printed: %q", out)
		}
	}

	// ForceCommand: the client's command is in SSH_ORIGINAL_COMMAND.
	if out, stderr, err := u.cl.run(t, forced, "", nil, nil, "echo", "hi"); err != nil || out != "forced:echo hi\n" {
		t.Errorf("ForceCommand: %q %q %v", out, stderr, err)
	}
	// UnusedConnectionTimeout: a master connection without sessions ends.
	done := u.cl.background(t, forced, "-N", "-M", "-S", filepath.Join(t.TempDir(), "ctl"), "-o", "ControlPersist=no")
	select {
	case <-done:
	case <-testenv.Timeout(t):
		t.Error("UnusedConnectionTimeout 2s: an unused connection was not closed")
	}

	// ForceCommand internal-sftp -R: downloads work, uploads are refused,
	// other sessions get OpenSSH's message.
	u.write(t, "data.txt", "sftp data\n", 0o644)
	sftp := testenv.LookPath(t, "sftp", "apt-get install openssh-client")
	ldir := t.TempDir()
	batch := fmt.Sprintf("get data.txt %s/got.txt\nput %s/got.txt uploaded.txt\n", ldir, ldir)
	out, _ := sftpBatch(t, sftp, u.cl, sftpOnly, batch)
	if got, err := os.ReadFile(filepath.Join(ldir, "got.txt")); err != nil || string(got) != "sftp data\n" {
		t.Errorf("sftp get under ForceCommand internal-sftp -R: %q %v (%s)", got, err, out)
	}
	if _, err := os.Stat(u.path("uploaded.txt")); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("sftp put under ForceCommand internal-sftp -R: %v (%s)", err, out)
	}
	if out, _, err := u.cl.run(t, sftpOnly, "", nil, nil, "echo", "hi"); err == nil || out != "This service allows sftp connections only.\n" {
		t.Errorf("a command under ForceCommand internal-sftp: %q %v", out, err)
	}
}

// motdLine is the first line of /etc/motd, "" when there is none (the
// PrintMotd checks then have nothing to look for).
func motdLine() string {
	b, err := os.ReadFile("/etc/motd")
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(first)
}

// sftpBatch runs sftp with batch (not stopping at a failed command) and
// returns its output.
func sftpBatch(t *testing.T, sftp string, cl *opensshClient, addr, batch string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := testenv.Context(t)
	defer cancel()
	lines := ""
	for _, l := range strings.Split(strings.TrimSpace(batch), "\n") {
		lines += "-" + l + "\n" // "-": carry on after a failure
	}
	cmd := exec.CommandContext(ctx, sftp, "-F", "/dev/null", "-i", cl.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-P", port, "-b", "-", cl.user+"@"+host)
	cmd.Stdin = strings.NewReader(lines)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
