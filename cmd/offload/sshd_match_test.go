package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
)

// opensshClient is the OpenSSH client with a key authorized for the
// account loginAccount gives.
type opensshClient struct {
	ssh, key, authorizedKeys, user string
	env                            []string // added to the client's environment
}

func newOpenSSHClient(t *testing.T) *opensshClient {
	t.Helper()
	bin := testenv.LookPath(t, "ssh", "apt-get install openssh-client")
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(key, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, _ := ssh.NewPublicKey(pub)
	name, ak := loginAccount(t, dir, ssh.MarshalAuthorizedKey(sp))
	return &opensshClient{ssh: bin, key: key, authorizedKeys: ak, user: name}
}

// run runs the client against addr (host:port) with options opts and
// then the command; bind, when set, is the source address (ssh -b).
func (c *opensshClient) run(t *testing.T, addr, bind string, stdin io.Reader, opts []string, command ...string) (string, string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	// ssh takes the first value of an option: opts come first.
	argv := append(append([]string{}, opts...), "-F", "/dev/null", "-i", c.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-o", "ConnectTimeout=10", "-p", port, "-l", c.user)
	if bind != "" {
		argv = append(argv, "-b", bind)
	}
	argv = append(argv, host)
	argv = append(argv, command...)
	// Until the test's deadline, not a fixed bound: on a loaded machine a
	// login shell's startup files alone can take a minute (a stale pyenv
	// lock in root's ~/.bashrc waits 60 s).
	ctx, cancel := context.WithDeadline(context.Background(), testenv.StartupDeadline(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, c.ssh, argv...)
	if c.env != nil {
		cmd.Env = append(os.Environ(), c.env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// freePorts returns n distinct free TCP ports of 127.0.0.1, reserved for
// t (testenv.FreePort).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		p, _ := strconv.Atoi(testenv.FreePort(t))
		ports = append(ports, p)
	}
	return ports
}

// echoServer accepts on 127.0.0.1 and echoes; it returns its address.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
	return l.Addr().String()
}

// TestMatchWithOpenSSHClient ports OpenSSH's regress cfgmatch and
// cfgmatchlisten to offload with the OpenSSH client: Match blocks keyed on
// the local port, the client address and the user change forwarding and
// the banner of exactly the connections they match.
func TestMatchWithOpenSSHClient(t *testing.T) {
	cl := newOpenSSHClient(t)
	ports := freePorts(t, 2)
	banner := filepath.Join(t.TempDir(), "banner")
	os.WriteFile(banner, []byte("matched banner for 127.0.0.2\n"), 0o644)
	cfg := writeConfig(t, fmt.Sprintf(`ListenAddress 127.0.0.1:%d
ListenAddress 127.0.0.1:%d
StrictModes no
AuthorizedKeysFile %s
AllowTcpForwarding yes
Match LocalPort %d
	AllowTcpForwarding no
Match Address 127.0.0.2
	Banner %s
Match User !%s
	MaxSessions 0
`, ports[0], ports[1], cl.authorizedKeys, ports[1], banner, cl.user))
	startTestDaemon(t, cfg)
	echo := echoServer(t)
	open := fmt.Sprintf("127.0.0.1:%d", ports[0])
	restricted := fmt.Sprintf("127.0.0.1:%d", ports[1])

	// Forwarding on the open port works; on the Match LocalPort one it is
	// refused, as with sshd.
	out, stderr, err := cl.run(t, open, "", strings.NewReader("ping\n"), []string{"-W", echo})
	if err != nil || out != "ping\n" {
		t.Errorf("-W through the open port: %q %q %v", out, stderr, err)
	}
	out, stderr, err = cl.run(t, restricted, "", strings.NewReader("ping\n"), []string{"-W", echo})
	if err == nil || out != "" || !strings.Contains(stderr, "stdio forwarding failed") {
		t.Errorf("-W through the Match LocalPort port: %q %q %v", out, stderr, err)
	}
	// Sessions still work there (the other keywords stay global), and the
	// user is not !user, so MaxSessions 0 does not apply.
	if out, stderr, err := cl.run(t, restricted, "", nil, nil, "echo", "offload-ok"); err != nil || out != "offload-ok\n" {
		t.Errorf("session on the Match LocalPort port: %q %q %v", out, stderr, err)
	}
	// The banner goes only to clients from 127.0.0.2.
	if _, stderr, err := cl.run(t, open, "127.0.0.2", nil, []string{"-o", "LogLevel=INFO"}, "true"); err != nil ||
		!strings.Contains(stderr, "matched banner") {
		t.Errorf("from 127.0.0.2: %q %v", stderr, err)
	}
	if _, stderr, err := cl.run(t, open, "127.0.0.1", nil, []string{"-o", "LogLevel=INFO"}, "true"); err != nil ||
		strings.Contains(stderr, "matched banner") {
		t.Errorf("from 127.0.0.1: %q %v", stderr, err)
	}
}

// TestRefuseConnectionMatch: RefuseConnection in a Match block ends the
// connections it matches, others are served.
func TestRefuseConnectionMatch(t *testing.T) {
	cl := newOpenSSHClient(t)
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nStrictModes no\nAuthorizedKeysFile "+cl.authorizedKeys+
		"\nMatch Address 127.0.0.2\n\tRefuseConnection yes\n")
	d, _, _ := startTestDaemon(t, cfg)
	addr := d.listeners[0].Addr().String()
	if out, stderr, err := cl.run(t, addr, "127.0.0.2", nil, nil, "echo", "no"); err == nil || out != "" {
		t.Errorf("refused address served: %q %q %v", out, stderr, err)
	}
	if out, stderr, err := cl.run(t, addr, "127.0.0.1", nil, nil, "echo", "offload-ok"); err != nil || out != "offload-ok\n" {
		t.Errorf("other address: %q %q %v", out, stderr, err)
	}
}
