package restart

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// TestOpenSSHRestartKeepsSession is the behaviour the tests above hold
// offload to, shown on OpenSSH 9.2's sshd: SIGTERM to the listener (what
// systemctl restart sends with KillMode=process) leaves an established
// session running to its end.
func TestOpenSSHRestartKeepsSession(t *testing.T) {
	testenv.Root(t)
	sshd := testenv.FirstFile(t, "OpenSSH sshd", "Debian package openssh-server", "/usr/sbin/sshd")
	os.MkdirAll("/run/sshd", 0o755) // its privilege separation directory
	s := &server{t: t, dir: t.TempDir(), port: testenv.FreePort(t)}
	hostKey := filepath.Join(s.dir, "host_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	conf := filepath.Join(s.dir, "sshd_config")
	os.WriteFile(conf, []byte(fmt.Sprintf("ListenAddress 127.0.0.1:%s\nHostKey %s\nPidFile %s\nUsePAM no\nLogLevel DEBUG\n",
		s.port, hostKey, filepath.Join(s.dir, "pid"))), 0o600)
	s.log = filepath.Join(s.dir, "log")
	f, _ := os.Create(s.log)
	defer f.Close()
	cmd := exec.Command(sshd, "-D", "-e", "-f", conf)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	s.waitLog(0, regexp.MustCompile(`Server listening on 127\.0\.0\.1`))

	a := newAccount(t)
	se := s.session(a, "echo ready; sha256sum", "-o", "LogLevel=ERROR")
	se.waitOutput(regexp.MustCompile(`ready`))
	data := make([]byte, 2<<20)
	rand.Read(data)
	sum := sha256.Sum256(data)
	se.stdin.Write(data[:1<<20])
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(waitLimit):
		t.Fatal("sshd did not exit after SIGTERM")
	}
	if _, err := se.stdin.Write(data[1<<20:]); err != nil {
		t.Fatalf("writing after the listener stopped: %v", err)
	}
	se.stdin.Close()
	if code := se.wait(); code != 0 {
		t.Fatalf("the session ended with %d", code)
	}
	if out, _ := se.output(); !strings.Contains(out, hex.EncodeToString(sum[:])) {
		t.Fatalf("checksum %q, want %x", out, sum)
	}
}
