package main

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/proctree"
	"github.com/offload/offload/internal/testenv"
)

const helperEnv = "OFFLOAD_SSHD_SIGNAL_HELPER"

// TestSshdSignalHelper is the child process of TestSshdSignals: it runs
// main (dispatch and signal wiring included) with the arguments after "--".
func TestSshdSignalHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for TestSshdSignals")
	}
	for i, a := range os.Args {
		if a == "--" {
			os.Args = append([]string{"offload"}, os.Args[i+1:]...)
			break
		}
	}
	main()
}

// TestSshdSignals runs offload sshd as a process: SIGHUP loads a new host
// key for new connections, SIGTERM stops it with exit status 0 and removes
// the PidFile.
func TestSshdSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	pid := filepath.Join(dir, "pid")
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nPidFile "+pid+"\n")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSshdSignalHelper$", "--", "sshd", "-D", "-f", cfg)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	addr := waitLog(t, lines, regexp.MustCompile(`msg=listening addr=(\S+)`))
	waitLog(t, lines, regexp.MustCompile(`msg="offload sshd (started)"`))
	first := hostKeyOf(t, addr)

	text, _ := os.ReadFile(cfg)
	newKey := writeHostKey(t, t.TempDir())
	os.WriteFile(cfg, []byte(strings.Replace(string(text), "HostKey ", "HostKey "+newKey+"\n#", 1)), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, lines, regexp.MustCompile(`msg="configuration (reloaded)"`))
	if k := hostKeyOf(t, addr); string(k.Marshal()) == string(first.Marshal()) {
		t.Error("SIGHUP did not load the new host key")
	}

	cmd.Process.Signal(syscall.SIGTERM)
	waitLog(t, lines, regexp.MustCompile(`msg="offload sshd (stopped)"`))
	done := make(chan error, 1)
	go func() {
		for range lines {
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-testenv.Timeout(t):
		t.Fatal("no exit after SIGTERM")
	}
	if _, err := os.Stat(pid); !os.IsNotExist(err) {
		t.Errorf("PidFile left behind: %v", err)
	}
}

// waitLog returns the first submatch of the first log line matching re,
// waiting until the test's startup deadline: a start or a reload is an
// event, not a duration (a SIGHUP reload took over 60 s beside two test
// runs and busy loops, at load 13, and the 60 s this allowed failed it).
func waitLog(t *testing.T, lines <-chan string, re *regexp.Regexp) string {
	t.Helper()
	timeout := time.After(time.Until(testenv.StartupDeadline(t)))
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("process ended before logging %s", re)
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		case <-timeout:
			t.Fatalf("no log line matching %s", re)
		}
	}
}

// TestSshdInetdOpenSSH drives inetd mode with the OpenSSH client through
// ProxyCommand, the way OpenSSH's own regress harness runs sshd -i. The
// server runs under nohup, SIGHUP ignored: the session's program must
// still get SIGHUP's default action, as under OpenSSH's sshd, or it
// outlives a hangup of its terminal (TestSshdInetdHangup).
func TestSshdInetdOpenSSH(t *testing.T) {
	cmd := inetdClient(t, "echo inetd-ok; sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "inetd-ok") {
		t.Fatalf("ssh via sshd -i: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^([0-9a-f]{16})$`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no SigIgn mask in the session's output:\n%s", out)
	}
	if mask, _ := strconv.ParseUint(m[1], 16, 64); mask&1 != 0 {
		t.Fatalf("the session's program ignores SIGHUP (SigIgn %s)", m[1])
	}
}

// TestSshdInetdHangup: a program in a terminal session ends when its
// client vanishes (the terminal hangs up), although the server was
// started with SIGHUP ignored.
func TestSshdInetdHangup(t *testing.T) {
	arg := strconv.Itoa(1000000 + os.Getpid()) // names this test's sleep
	cmd := inetdClient(t, "sleep "+arg, "-tt")
	in, err := cmd.StdinPipe() // held open: the session has no EOF to end on
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitUntil(t, func() bool { return len(cmdlinePIDs("sleep", arg)) == 1 }) {
		cmd.Process.Kill()
		t.Fatal("the session's sleep did not start")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !testenv.WaitUntil(t, func() bool { return len(cmdlinePIDs("sleep", arg)) == 0 }) {
		for _, pid := range cmdlinePIDs("sleep", arg) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatal("the session's sleep outlived the hangup of its terminal")
	}
}

// inetdClient is an OpenSSH client command running command (with the
// extra client options opts) on offload sshd -i, started by its
// ProxyCommand under nohup.
func inetdClient(t *testing.T, command string, opts ...string) *exec.Cmd {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes")
	}
	sshPath := testenv.LookPath(t, "ssh", "apt-get install openssh-client")
	dir := t.TempDir()
	cc, ak := clientFor(t, dir)
	key := writeClientKey(t, dir, ak)
	cfg := writeConfig(t, "StrictModes no\nAuthorizedKeysFile "+ak+"\n")
	proxy := fmt.Sprintf("nohup env %s=1 %s -test.run=^TestSshdSignalHelper$ -- sshd -i -f %s", helperEnv, os.Args[0], cfg)
	args := append(slices.Clone(opts), "-F", "none", "-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ProxyCommand="+proxy,
		cc.User+"@offload-inetd", command)
	cmd := exec.Command(sshPath, args...)
	cmd.Env = append(os.Environ(), "SHLVL=1")
	return cmd
}

// cmdlinePIDs lists the processes whose command line is exactly argv.
func cmdlinePIDs(argv ...string) []int {
	pids, _ := proctree.Find("/proc", func(a []string) bool { return slices.Equal(a, argv) })
	return pids
}

// writeClientKey writes an OpenSSH private key file whose public half is
// the only line of authorized_keys file ak, and returns its path.
func writeClientKey(t *testing.T, dir, ak string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, _ := ssh.NewSignerFromKey(priv)
	if err := os.WriteFile(ak, ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
