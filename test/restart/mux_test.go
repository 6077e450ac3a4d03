package restart

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/offload/offload/sshd/loginrec"
)

// TestRestartNewSessionInKeptConnection: a connection kept across a
// restart opens new sessions afterwards (OpenSSH's connection sharing):
// an exec, and a pty session whose login records the keeper writes (who
// lists it) and closes when it ends.
func TestRestartNewSessionInKeptConnection(t *testing.T) {
	if _, err := os.Stat(loginrec.UtmpFile); err != nil {
		if f, err := os.OpenFile(loginrec.UtmpFile, os.O_CREATE|os.O_WRONLY, 0o664); err == nil {
			f.Close()
		}
	}
	s := newServer(t, "")
	a := newAccount(t)
	ctl := filepath.Join(t.TempDir(), "ctl")
	d1 := s.start()
	master := s.session(a, "", "-N", "-o", "LogLevel=ERROR", "-o", "ControlMaster=yes", "-o", "ControlPath="+ctl)
	waitFor(t, "the shared connection", func() bool {
		return exec.Command("ssh", "-o", "ControlPath="+ctl, "-O", "check", "x").Run() == nil
	})
	keeper := d1.stop()
	if keeper == 0 {
		t.Fatal("the stopped daemon started no session keeper")
	}
	s.start()

	shared := []string{"-o", "ControlPath=" + ctl, "-o", "ControlMaster=no", "-o", "LogLevel=ERROR", "-l", a.name}
	if out, err := exec.Command("ssh", append(shared, "127.0.0.1", "echo exec-$((6*7))")...).CombinedOutput(); err != nil || !strings.Contains(string(out), "exec-42") {
		t.Fatalf("exec over the kept connection: %v: %q", err, out)
	}
	wtmpBefore := fileSize(loginrec.WtmpFile)
	pty := s.command("ssh", append(shared, "-tt", "127.0.0.1", "/bin/sh")...)
	pty.stdin.Write([]byte("tty\n"))
	tty := strings.TrimPrefix(pty.waitOutput(regexp.MustCompile(`/dev/pts/\d+`))[0], "/dev/")
	waitFor(t, "utmp to list the new session", func() bool { return whoHas(a.name, tty) })
	pty.stdin.Write([]byte("exit\n"))
	pty.wait()
	waitFor(t, "the wtmp logout of "+tty, func() bool {
		var login, logout bool
		for _, e := range wtmpSince(t, wtmpBefore) {
			login = login || (e.Type == 7 && e.User == a.name && e.Line == tty)
			logout = logout || (e.Type == 8 && e.Line == tty)
		}
		return login && logout
	})
	exec.Command("ssh", "-o", "ControlPath="+ctl, "-O", "exit", "x").Run()
	master.wait()
	waitFor(t, "the session keeper to exit after the last session", func() bool { return !alive(keeper) })
}
