package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// syslogSink is a unixgram socket standing in for /dev/log: it keeps the
// datagrams it receives.
type syslogSink struct {
	path string
	mu   sync.Mutex
	got  []string
}

func newSyslogSink(t *testing.T) *syslogSink {
	t.Helper()
	s := &syslogSink{path: filepath.Join(t.TempDir(), "log")}
	c, err := net.ListenPacket("unixgram", s.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 8192)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.got = append(s.got, string(buf[:n]))
			s.mu.Unlock()
		}
	}()
	return s
}

// wait returns the first datagram holding text, failing at the startup
// deadline.
func (s *syslogSink) wait(t *testing.T, text string) string {
	t.Helper()
	var line string
	if testenv.WaitUntil(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, g := range s.got {
			if strings.Contains(g, text) {
				line = g
				return true
			}
		}
		return false
	}) {
		return line
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Fatalf("no syslog line with %q; got:\n%s", text, strings.Join(s.got, "\n"))
	return ""
}

// TestInternalSFTPFacility: with SyslogFacility LOCAL3, internal-sftp's
// -f AUTHPRIV sends the SFTP session's lines to syslog under AUTHPRIV
// (priority 86: AUTHPRIV, info) and the server's own under LOCAL3 (158),
// as sshd and its sftp-server do, through the default process model (the
// lines come from the user's post-auth process). Before, -f was accepted
// and every line went under SyslogFacility.
func TestInternalSFTPFacility(t *testing.T) {
	sftpBin := testenv.LookPath(t, "sftp", "apt-get install openssh-client")
	sink := newSyslogSink(t)
	rt, closeFn, err := newFacilityRouter("LOCAL3", "unixgram", sink.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	cl := newOpenSSHClient(t)
	port := freePorts(t, 1)[0]
	cfg := writeConfig(t, fmt.Sprintf("ListenAddress 127.0.0.1:%d\nStrictModes no\nAuthorizedKeysFile %s\nSyslogFacility LOCAL3\n"+
		"Subsystem sftp internal-sftp -f AUTHPRIV -l INFO\n", port, cl.authorizedKeys))
	o, err := parseSshdFlags([]string{"-f", cfg, "-shutdown-timeout", "2s"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	o.level = new(slog.LevelVar)
	log := slog.New(&levelHandler{inner: rt, level: o.level})
	ctx, cancel := context.WithCancel(context.Background())
	d, err := startDaemon(ctx, o, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); d.loop(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	batch := filepath.Join(t.TempDir(), "batch")
	os.WriteFile(batch, []byte("ls /\n"), 0o644)
	out, err := exec.Command(sftpBin, "-b", batch, "-P", fmt.Sprint(port), "-i", cl.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-F", "/dev/null", cl.user+"@127.0.0.1").CombinedOutput()
	if err != nil {
		t.Fatalf("sftp: %v\n%s", err, out)
	}
	if l := sink.wait(t, "session opened for local user"); !strings.HasPrefix(l, "<86>") || strings.Contains(l, "facility") {
		t.Errorf("internal-sftp line %q: want priority <86> (AUTHPRIV.info), no facility attribute", l)
	}
	if l := sink.wait(t, "Accepted publickey for"); !strings.HasPrefix(l, "<158>") {
		t.Errorf("server line %q: want priority <158> (LOCAL3.info)", l)
	}
}
