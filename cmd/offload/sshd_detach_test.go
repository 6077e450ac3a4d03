package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"golang.org/x/sys/unix"
)

// offloadCmd runs the test binary as offload itself (TestMain) with args.
func offloadCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "OFFLOAD_TEST_MAIN=1")
	return cmd
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestSshdDetaches: without -D, offload sshd returns 0 once a daemon in
// its own session listens and has written its PidFile, as sshd does; a
// HostKey it cannot load is logged and skipped, SecurityKeyProvider is
// accepted; without -E the daemon logs to syslog and starts whether or
// not /dev/log exists. SIGTERM stops it and removes the PidFile.
func TestSshdDetaches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	port := freePorts(t, 1)[0]
	cfg := writeConfig(t, fmt.Sprintf("ListenAddress 127.0.0.1:%d\nPidFile %s\nHostKey %s\nSecurityKeyProvider /usr/lib/none/sk-dummy.so\n",
		port, pidFile, filepath.Join(dir, "missing_key")))
	for _, logArgs := range [][]string{{"-E", filepath.Join(dir, "log")}, nil} {
		os.Remove(pidFile)
		var stderr bytes.Buffer
		cmd := offloadCmd(t, append([]string{"sshd", "-f", cfg}, logArgs...)...)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("offload sshd %v: %v\n%s", logArgs, err, stderr.String())
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatalf("no PidFile once the command returned: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == cmd.Process.Pid {
			t.Fatalf("PidFile %q: the daemon must be another process than %d", b, cmd.Process.Pid)
		}
		if sid, err := unix.Getsid(pid); err != nil || sid != pid {
			t.Errorf("daemon %d: session %d (%v), want its own", pid, sid, err)
		}
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("daemon not listening: %v", err)
		}
		c.Close()
		// SIGHUP writes the PidFile again, as sshd's re-exec does
		// (OpenSSH's regress reconfigure waits for it).
		os.Remove(pidFile)
		syscall.Kill(pid, syscall.SIGHUP)
		waitFor(t, pidFile)
		syscall.Kill(pid, syscall.SIGTERM)
		waitGone(t, pidFile)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	if !strings.Contains(string(log), "unable to load host key") || !strings.Contains(string(log), "missing_key") {
		t.Errorf("the unusable host key was not logged:\n%s", log)
	}
}

func waitFor(t *testing.T, path string) {
	t.Helper()
	if !testenv.WaitUntil(t, func() bool { _, err := os.Stat(path); return err == nil }) {
		t.Fatalf("%s not written again after SIGHUP", path)
	}
}

func waitGone(t *testing.T, path string) {
	t.Helper()
	if !testenv.WaitUntil(t, func() bool { _, err := os.Stat(path); return os.IsNotExist(err) }) {
		t.Fatalf("%s still there: the daemon did not stop", path)
	}
}

// TestSshdExitStatus: a configuration, key or listen error ends offload
// sshd with 255, as sshd's fatal errors (systemd's
// RestartPreventExitStatus=255), whether or not it would detach; the
// detached daemon's message reaches the caller's stderr. -V prints the
// version and exits 0.
func TestSshdExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs offload")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sshd", "-t", "-f", cfg, "-o", "Ciphers=rot13"}, "rot13"},
		{[]string{"sshd", "-f", cfg, "-o", "Ciphers=rot13"}, "rot13"},
		{[]string{"sshd", "-D", "-f", cfg, "-o", "HostKey=" + filepath.Join(dir, "none")}, "no host keys available"},
		{[]string{"sshd", "-f", cfg, "-o", "HostKey=" + filepath.Join(dir, "none")}, "no host keys available"},
	} {
		out, err := offloadCmd(t, tc.args...).CombinedOutput()
		if code := exitCode(err); code != 255 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: status %d, output %q; want 255 and %q", tc.args[1:], code, out, tc.want)
		}
	}
	out, err := offloadCmd(t, "sshd", "-V").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "offload "+Version) {
		t.Errorf("sshd -V: %v %q", err, out)
	}
}

// TestSshdInetdVersionMismatch: sshd -i answers a client of another
// protocol version with a line of text and exits 255 (OpenSSH's regress
// proto-mismatch), and a line that is no identification with "Invalid
// SSH identification string." (what OpenSSH's clients and its multiplex
// test look for).
func TestSshdInetdVersionMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs offload")
	}
	cfg := writeConfig(t, "")
	for in, want := range map[string]string{
		"SSH-1.5-HALLO\n": "Protocol version not supported",
		"\n":              "Invalid SSH identification string.\r\n",
	} {
		cmd := offloadCmd(t, "sshd", "-i", "-f", cfg)
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if code := exitCode(err); code != 255 || !strings.HasPrefix(string(out), "SSH-2.0-") || !strings.Contains(string(out), want) {
			t.Errorf("sshd -i given %q: status %d, output %q; want 255 and %q", in, code, out, want)
		}
	}
}
