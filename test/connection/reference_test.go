package connection_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// reference starts OpenSSH's sshd beside the fixture's server, with the
// same authorized key and the extra sshd_config lines, and returns a
// fixture pointing at it, so a test can run the same client commands
// against both.
func (f *fixture) reference(t *testing.T, extra ...string) *fixture {
	t.Helper()
	sshd := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	keygen := testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	if os.Geteuid() != 0 {
		t.Skip("the OpenSSH reference server needs root (privilege separation)")
	}
	os.MkdirAll("/run/sshd", 0o755) // its privilege separation directory
	dir := t.TempDir()
	hostKey := filepath.Join(dir, "hostkey")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	var logs *syncBuffer
	t.Cleanup(func() {
		if t.Failed() && logs != nil {
			t.Logf("OpenSSH sshd log:\n%s", logs.String())
		}
	})
	n := 0
	s := testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		n++
		// its PidFile, a path of this try alone, is written once it listens
		pidFile := filepath.Join(dir, "sshd."+strconv.Itoa(n)+".pid")
		cfg := strings.Join(append([]string{
			"Port " + port, "ListenAddress 127.0.0.1", "HostKey " + hostKey,
			"AuthorizedKeysFile " + filepath.Join(f.dir, "authorized_keys"), "StrictModes no", "UsePAM no",
			"PidFile " + pidFile, "PermitRootLogin yes", "LogLevel ERROR", "AcceptEnv SHLVL LC_* OFFLOAD_OK",
		}, extra...), "\n") + "\n"
		cfgPath := filepath.Join(dir, "sshd_config")
		os.WriteFile(cfgPath, []byte(cfg), 0o600)
		if out, err := exec.Command(sshd, "-t", "-f", cfgPath).CombinedOutput(); err != nil {
			t.Fatalf("OpenSSH sshd -t: %v %s", err, out)
		}
		cmd := exec.Command(sshd, "-D", "-e", "-f", cfgPath)
		logs = &syncBuffer{}
		cmd.Stderr = logs
		return testenv.Launch{Cmd: cmd, Output: logs, Listens: func() bool { return testenv.FileExists(pidFile) }}
	})
	port := s.Port
	ref := *f
	ref.port = port
	return &ref
}

// waitPort waits until something listens on the loopback port.
func waitPort(t *testing.T, port string) {
	t.Helper()
	if !testenv.WaitUntil(t, func() bool { return testenv.Listening("127.0.0.1:" + port) }) {
		t.Fatalf("nothing listens on port %s", port)
	}
}

// background is an ssh client left running (forwarding, ControlMaster).
type background struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	lines  chan string
}

// sshBackground starts ssh with args (options, then the remote command,
// which may be "" with -N) and keeps it running until the test ends.
func (f *fixture) sshBackground(t *testing.T, env []string, args ...string) *background {
	t.Helper()
	bin := testenv.LookPath(t, "ssh", "apt-get install openssh-client")
	var argv []string
	for _, a := range f.common() {
		if a == "LogLevel=ERROR" {
			a = "LogLevel=INFO" // ssh says what it forwards at INFO
		}
		argv = append(argv, a)
	}
	argv = append(argv, "-p", f.port, "-l", f.user)
	argv = append(argv, args[:len(args)-1]...)
	argv = append(argv, "127.0.0.1")
	if last := args[len(args)-1]; last != "" {
		argv = append(argv, last)
	}
	b := &background{cmd: exec.Command(bin, argv...), lines: make(chan string, 64)}
	b.cmd.Env = clientEnv(env...)
	pr, pw, _ := os.Pipe()
	b.cmd.Stderr = pw
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			b.mu.Lock()
			b.stderr.WriteString(sc.Text() + "\n")
			b.mu.Unlock()
			select {
			case b.lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		b.cmd.Process.Kill()
		b.cmd.Wait()
		if t.Failed() {
			t.Logf("ssh stderr:\n%s", b.errors())
		}
	})
	return b
}

func (b *background) errors() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.String()
}

// waitLine waits for a stderr line matching re and returns its groups.
func (b *background) waitLine(t *testing.T, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := testenv.Timeout(t)
	for {
		select {
		case l := <-b.lines:
			if m := rx.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("ssh printed no line matching %q; stderr:\n%s", re, b.errors())
			return nil
		}
	}
}

// dialRetry connects to addr, retrying while the listener comes up.
func dialRetry(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	if !testenv.WaitUntil(t, func() bool { c, err = net.Dial(network, addr); return err == nil }) {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends msg on c and expects it echoed.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo: %q %v, want %q", got, err, msg)
	}
}

// runTool runs a program with a timeout and returns its combined output.
func runTool(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = clientEnv(env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
