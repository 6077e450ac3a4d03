package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
)

func TestParseActivation(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		name  string
		env   func(string) string
		n     int
		names []string
		err   string
	}{
		{"none", env(), 0, nil, ""},
		{"two named", env("LISTEN_PID", "42", "LISTEN_FDS", "2", "LISTEN_FDNAMES", "ssh:ssh6"), 2, []string{"ssh", "ssh6"}, ""},
		{"unnamed", env("LISTEN_PID", "42", "LISTEN_FDS", "1"), 1, []string{""}, ""},
		{"another process's", env("LISTEN_PID", "41", "LISTEN_FDS", "2"), 0, nil, ""},
		{"no pid", env("LISTEN_FDS", "2"), 0, nil, ""},
		{"bad count", env("LISTEN_PID", "42", "LISTEN_FDS", "two"), 0, nil, "bad LISTEN_FDS"},
		{"too many", env("LISTEN_PID", "42", "LISTEN_FDS", "100000"), 0, nil, "bad LISTEN_FDS"},
		{"names mismatch", env("LISTEN_PID", "42", "LISTEN_FDS", "2", "LISTEN_FDNAMES", "ssh"), 0, nil, "names 1 descriptors"},
	}
	for _, tc := range cases {
		a, err := parseActivation(tc.env, 42)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err != nil || a.n != tc.n || fmt.Sprint(a.names) != fmt.Sprint(tc.names) {
			t.Errorf("%s: %+v %v", tc.name, a, err)
		}
	}
}

// notifySocket listens where NOTIFY_SOCKET points and returns a function
// that waits for a message containing want.
func notifySocket(t *testing.T) (string, func(want string)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return path, func(want string) {
		t.Helper()
		buf := make([]byte, 4096)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("waiting for %q from sd_notify: %v", want, err)
			}
			if strings.Contains(string(buf[:n]), want) {
				return
			}
		}
	}
}

// TestSocketActivation runs offload sshd as systemd would for a .socket
// unit with two ListenStream= lines: descriptors 3 and 4 listening,
// LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES set, NOTIFY_SOCKET for
// Type=notify. It must serve on both passed sockets (not on its
// ListenAddress), say READY=1, RELOADING=1 (with MONOTONIC_USEC) and
// READY=1 again on SIGHUP, and STOPPING=1 on SIGTERM.
func TestSocketActivation(t *testing.T) {
	dir := t.TempDir()
	cc, ak := clientFor(t, dir)
	unused := freePorts(t, 1)[0]
	cfg := writeConfig(t, fmt.Sprintf("ListenAddress 127.0.0.1:%d\nStrictModes no\nAuthorizedKeysFile %s\n", unused, ak))
	var files []*os.File
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f, err := l.(*net.TCPListener).File()
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		files = append(files, f)
		l.Close()
	}
	notify, wait := notifySocket(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// sh sets LISTEN_PID to its own pid, which exec keeps.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=2 LISTEN_FDNAMES=ssh:ssh-alt exec "$0" "$@"`,
		exe, "sshd", "-D", "-f", cfg, "-shutdown-timeout", "2s")
	cmd.Env = append(os.Environ(), "OFFLOAD_TEST_MAIN=1", "NOTIFY_SOCKET="+notify)
	cmd.ExtraFiles = files
	stderr := &sshtest.LogBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		f.Close()
	}
	var waitErr error
	done := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	wait("READY=1")
	for _, a := range addrs {
		c, err := ssh.Dial("tcp", a, cc)
		if err != nil {
			t.Fatalf("passed socket %s: %v\n%s", a, err, stderr.String())
		}
		runEcho(t, c)
		c.Close()
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", unused), time.Second); err == nil {
		c.Close()
		t.Error("socket-activated offload also listens on its ListenAddress")
	}
	cmd.Process.Signal(syscall.SIGHUP)
	wait("RELOADING=1\nMONOTONIC_USEC=")
	wait("READY=1")
	c, err := ssh.Dial("tcp", addrs[0], cc)
	if err != nil {
		t.Fatalf("after reload: %v\n%s", err, stderr.String())
	}
	c.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	wait("STOPPING=1")
	select {
	case <-done:
		if waitErr != nil {
			t.Errorf("exit: %v\n%s", waitErr, stderr.String())
		}
	case <-testenv.Timeout(t):
		t.Fatal("did not stop")
	}
}

// TestSocketActivationNotAListener: a passed descriptor that is not a
// listening stream socket stops the start with a message naming it.
func TestSocketActivationNotAListener(t *testing.T) {
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\n")
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exe, _ := os.Executable()
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=ssh exec "$0" "$@"`, exe, "sshd", "-D", "-f", cfg)
	cmd.Env = append(os.Environ(), "OFFLOAD_TEST_MAIN=1")
	cmd.ExtraFiles = []*os.File{f}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "descriptor 3 (ssh) is not a stream socket") {
		t.Errorf("%v: %s", err, out)
	}
}

// TestSystemdUnits: the shipped units use socket activation and
// notification, and systemd-analyze verify accepts them.
func TestSystemdUnits(t *testing.T) {
	svc, err := os.ReadFile("../../docs/offload-sshd.service")
	if err != nil {
		t.Fatal(err)
	}
	sock, err := os.ReadFile("../../docs/offload-sshd.socket")
	if err != nil {
		t.Fatal(err)
	}
	// SyslogIdentifier and SyslogFacility: fail2ban's sshd filter reads
	// the journal's and auth.log's lines only under the name sshd
	for _, want := range []string{"\nType=notify\n", "\nExecReload=/bin/kill -HUP $MAINPID\n", "\nSyslogIdentifier=sshd\n", "\nSyslogFacility=auth\n",
		"\nKillMode=process\n"} { // restarts keep sessions: systemd must not kill the session keeper
		if !strings.Contains(string(svc), want) {
			t.Errorf("offload-sshd.service lacks %q", want)
		}
	}
	for _, want := range []string{"\nListenStream=22\n", "\nAccept=no\n"} {
		if !strings.Contains(string(sock), want) {
			t.Errorf("offload-sshd.socket lacks %q", want)
		}
	}
	analyze := testenv.LookPath(t, "systemd-analyze", "apt-get install systemd")
	dir := t.TempDir()
	// The units name the installed binary; verify them with one that exists.
	writeFileT(t, dir, "offload-sshd.service", strings.ReplaceAll(string(svc), "/usr/bin/offload", "/bin/true"))
	writeFileT(t, dir, "offload-sshd.socket", string(sock))
	out, err := exec.Command(analyze, "verify", "--man=no", filepath.Join(dir, "offload-sshd.socket"), filepath.Join(dir, "offload-sshd.service")).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
