// Package restart tests that restarting offload sshd keeps established
// sessions, as restarting OpenSSH's does: the real binary as root, with
// throwaway users and the OpenSSH client. No test waits for time to pass:
// each waits for an event (a log line, a process's end, output).
package restart

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/offload/offload/internal/proctree"
	"github.com/offload/offload/internal/testenv"
)

// waitLimit bounds every wait for an event; reaching it fails the test.
const waitLimit = 90 * time.Second

// server is the configuration of successive daemons on one port.
type server struct {
	t     *testing.T
	dir   string
	conf  string
	port  string
	log   string // the daemons' (and keepers') log, a file they share
	bin   string
	extra []string
}

// newServer writes a configuration: a host key (file, unless the lines
// name one), a free loopback port, the lines given.
func newServer(t *testing.T, hostKey string, lines ...string) *server {
	t.Helper()
	testenv.Root(t)
	testenv.LookPath(t, "ssh", "Debian package openssh-client")
	s := &server{t: t, dir: t.TempDir(), bin: testenv.OffloadBinary(t)}
	if hostKey == "" {
		hostKey = filepath.Join(s.dir, "host_ed25519")
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	s.port = testenv.FreePort(t)
	s.conf = filepath.Join(s.dir, "sshd_config")
	s.log = filepath.Join(s.dir, "log")
	text := fmt.Sprintf("ListenAddress 127.0.0.1:%s\nHostKey %s\nLogLevel DEBUG\nPidFile %s\nPrivilegeSeparation yes\nCalibrationCache none\n%s\n",
		s.port, hostKey, filepath.Join(s.dir, "pid"), strings.Join(lines, "\n"))
	if err := os.WriteFile(s.conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(s.log)
			t.Logf("offload sshd log:\n%s", b)
		}
	})
	return s
}

// daemon is one running offload sshd.
type daemon struct {
	s      *server
	cmd    *exec.Cmd
	exited chan struct{}
}

// start runs a daemon in the foreground (-D) and waits until it serves.
// Its log goes to a file, not a pipe: a keeper it starts writes there
// too, and outlives it.
func (s *server) start() *daemon {
	s.t.Helper()
	f, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	mark := s.logSize()
	d := &daemon{s: s, exited: make(chan struct{})}
	d.cmd = exec.Command(s.bin, "sshd", "-D", "-e", "-f", s.conf)
	d.cmd.Stdout, d.cmd.Stderr = f, f
	if err := d.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	go func() { d.cmd.Wait(); close(d.exited) }()
	s.t.Cleanup(func() {
		d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.exited
	})
	s.waitLog(mark, regexp.MustCompile(`offload sshd started`))
	return d
}

// stop sends SIGTERM and waits for the daemon to exit; it returns the pid
// of the session keeper it started (0 for none).
func (d *daemon) stop() int {
	t := d.s.t
	t.Helper()
	mark := d.s.logSize()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(waitLimit):
		t.Fatal("offload sshd did not exit after SIGTERM")
	}
	if st := d.cmd.ProcessState; st == nil || !st.Success() {
		t.Fatalf("offload sshd exit: %v", st)
	}
	m := regexp.MustCompile(`sessions handed to the session keeper.*keeper_pid=(\d+)`).FindStringSubmatch(d.s.logSince(mark))
	if m == nil {
		return 0
	}
	pid, _ := strconv.Atoi(m[1])
	t.Cleanup(func() { // a failed test leaves no keeper behind
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

func (s *server) logSize() int {
	fi, err := os.Stat(s.log)
	if err != nil {
		return 0
	}
	return int(fi.Size())
}

func (s *server) logSince(off int) string {
	b, _ := os.ReadFile(s.log)
	if off > len(b) {
		return ""
	}
	return string(b[off:])
}

// waitLog waits for a line matching re written after offset off.
func (s *server) waitLog(off int, re *regexp.Regexp) string {
	s.t.Helper()
	var m []string
	waitFor(s.t, "log line "+re.String(), func() bool {
		m = re.FindStringSubmatch(s.logSince(off))
		return m != nil
	})
	return m[0]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(pid int) bool {
	s, err := proctree.ReadStat("/proc", pid)
	return err == nil && s.State != 'Z'
}

// account is a throwaway user with a key.
type account struct {
	name, key string
	uid       int
}

func newAccount(t *testing.T) *account {
	t.Helper()
	u := testenv.NewUser(t)
	testenv.Run(t, "usermod", "-p", "*", u.Username)
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, _ := os.ReadFile(key + ".pub")
	dir := filepath.Join(u.HomeDir, ".ssh")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	os.Chown(dir, uid, gid)
	os.Chown(filepath.Join(dir, "authorized_keys"), uid, gid)
	return &account{name: u.Username, key: key, uid: uid}
}

// sshArgs are the client's arguments for a's login running command.
func (s *server) sshArgs(a *account, command string, opts ...string) []string {
	args := []string{"-p", s.port, "-i", a.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"}
	args = append(args, opts...)
	args = append(args, a.name+"@127.0.0.1")
	if command != "" {
		args = append(args, command)
	}
	return args
}

// login runs a short command, which must succeed.
func (s *server) login(a *account, command string) string {
	s.t.Helper()
	out, err := exec.Command("ssh", s.sshArgs(a, command, "-o", "LogLevel=ERROR")...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("ssh %q: %v: %s", command, err, out)
	}
	return string(out)
}

// session is a running client whose input the test writes and whose
// output it reads.
type session struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	out    bytes.Buffer
	errb   bytes.Buffer
	exited chan struct{}
}

func (s *server) session(a *account, command string, opts ...string) *session {
	s.t.Helper()
	return s.command("ssh", s.sshArgs(a, command, opts...)...)
}

// command starts a client program (ssh, sftp) with a pipe to its input.
func (s *server) command(name string, args ...string) *session {
	s.t.Helper()
	se := &session{t: s.t, exited: make(chan struct{})}
	se.cmd = exec.Command(name, args...)
	var err error
	if se.stdin, err = se.cmd.StdinPipe(); err != nil {
		s.t.Fatal(err)
	}
	se.cmd.Stdout, se.cmd.Stderr = lockedWriter{&se.mu, &se.out}, lockedWriter{&se.mu, &se.errb}
	if err := se.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	go func() { se.cmd.Wait(); close(se.exited) }()
	s.t.Cleanup(func() {
		se.cmd.Process.Kill()
		<-se.exited
	})
	return se
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (se *session) output() (string, string) {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.out.String(), se.errb.String()
}

// waitOutput waits for the session's output to match re.
func (se *session) waitOutput(re *regexp.Regexp) []string {
	se.t.Helper()
	var m []string
	waitFor(se.t, "session output "+re.String(), func() bool {
		out, _ := se.output()
		m = re.FindStringSubmatch(out)
		return m != nil
	})
	return m
}

// wait waits for the client to exit and returns its exit code.
func (se *session) wait() int {
	se.t.Helper()
	select {
	case <-se.exited:
	case <-time.After(waitLimit):
		se.t.Fatal("the client did not exit")
	}
	return se.cmd.ProcessState.ExitCode()
}

// holdsListener reports whether process pid has a descriptor of a
// listening TCP socket on port (from /proc/net/tcp and /proc/PID/fd).
func holdsListener(t *testing.T, pid int, port string) bool {
	t.Helper()
	p, _ := strconv.Atoi(port)
	want := fmt.Sprintf(":%04X", p)
	listening := map[string]bool{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(file)
		for _, l := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(l)
			if len(f) > 9 && strings.HasSuffix(f[1], want) && f[3] == "0A" {
				listening["socket:["+f[9]+"]"] = true
			}
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); err == nil && listening[link] {
			return true
		}
	}
	return false
}
