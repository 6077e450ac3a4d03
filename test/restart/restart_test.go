package restart

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/loginrec"
)

// TestRestartKeepsTransfer: a transfer that spans a restart completes
// with its data intact, the new daemon takes logins meanwhile, and the
// session's key re-exchanges after the old daemon has gone (RekeyLimit is
// small) are signed by the session keeper, which exits with the session.
func TestRestartKeepsTransfer(t *testing.T) {
	restartDuringTransfer(t, newServer(t, "", "RekeyLimit 256K"))
}

func restartDuringTransfer(t *testing.T, s *server) {
	a := newAccount(t)
	d1 := s.start()
	// The remote side says it is there, then checksums what it reads.
	se := s.session(a, "echo ready; sha256sum", "-o", "LogLevel=DEBUG1")
	se.waitOutput(regexp.MustCompile(`ready`))
	data := make([]byte, 3<<20)
	rand.Read(data)
	sum := sha256.Sum256(data)
	if _, err := se.stdin.Write(data[:1<<20]); err != nil {
		t.Fatal(err)
	}

	keeper := d1.stop()
	if keeper == 0 {
		t.Fatal("the stopped daemon started no session keeper")
	}
	if _, err := os.Stat(filepath.Join(s.dir, "pid")); !os.IsNotExist(err) {
		t.Errorf("PidFile left by the stopped daemon (the keeper must not hold it): %v", err)
	}
	_, before := se.output()
	d2 := s.start() // the keeper holds no listener: a new daemon binds the port
	if !holdsListener(t, d2.cmd.Process.Pid, s.port) {
		t.Fatal("holdsListener does not see the new daemon's listener")
	}
	if holdsListener(t, keeper, s.port) {
		t.Error("the session keeper holds the listening socket")
	}
	if out := s.login(a, "echo new daemon"); !strings.Contains(out, "new daemon") {
		t.Fatalf("login to the new daemon: %q", out)
	}

	if _, err := se.stdin.Write(data[1<<20:]); err != nil {
		t.Fatalf("writing after the restart: %v", err)
	}
	se.stdin.Close()
	if code := se.wait(); code != 0 {
		_, errs := se.output()
		t.Fatalf("the session ended with %d after the restart:\n%s", code, errs)
	}
	out, errs := se.output()
	if !strings.Contains(out, hex.EncodeToString(sum[:])) {
		t.Fatalf("checksum after the restart: %q, want %x", out, sum)
	}
	if !strings.Contains(errs[len(before):], "SSH2_MSG_NEWKEYS received") {
		t.Errorf("no key re-exchange after the restart (RekeyLimit 256K); client log since:\n%s", errs[len(before):])
	}
	waitFor(t, "the session keeper to exit after the last session", func() bool { return !alive(keeper) })
	if !strings.Contains(s.logSince(0), "session keeper: the last session has ended") {
		t.Error("the keeper did not log the end of the last session")
	}
}

// TestRestartKeepsPAMSession: with UsePAM, a pty session open across a
// restart keeps its utmp entry (who), and when it ends after the restart
// its logout is recorded in wtmp (by the keeper) and its PAM session is
// closed (by its root session process).
func TestRestartKeepsPAMSession(t *testing.T) {
	testenv.Root(t)
	if _, err := os.Stat(loginrec.UtmpFile); err != nil {
		if f, err := os.OpenFile(loginrec.UtmpFile, os.O_CREATE|os.O_WRONLY, 0o664); err == nil {
			f.Close() // systemd-tmpfiles makes it at boot; a container may not have
		}
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	pamLog := filepath.Join(dir, "pam.log")
	script := filepath.Join(dir, "pam-exec.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho \"$PAM_TYPE $PAM_USER\" >> "+pamLog+"\n"), 0o755)
	service := testenv.PAMService(t, "oftrst", "auth required pam_permit.so\naccount required pam_permit.so\nsession required pam_exec.so "+script+"\n")

	s := newServer(t, "", "UsePAM yes", "PAMServiceName "+service)
	a := newAccount(t)
	wtmpBefore := fileSize(loginrec.WtmpFile)
	d1 := s.start()
	se := s.session(a, "/bin/sh", "-tt", "-o", "LogLevel=ERROR")
	se.stdin.Write([]byte("tty\n"))
	tty := strings.TrimPrefix(se.waitOutput(regexp.MustCompile(`/dev/pts/\d+`))[0], "/dev/")
	// The record is written just after the session's program starts.
	waitFor(t, "utmp to list the session", func() bool { return whoHas(a.name, tty) })

	keeper := d1.stop()
	if keeper == 0 {
		t.Fatal("the stopped daemon started no session keeper")
	}
	s.start()
	if !whoHas(a.name, tty) {
		t.Error("the restart removed the session's utmp entry")
	}
	if b, _ := os.ReadFile(pamLog); strings.Contains(string(b), "close_session") {
		t.Errorf("the restart closed the PAM session: %q", b)
	}
	// The session still answers, then ends.
	se.stdin.Write([]byte("echo still-$((40+2))\n"))
	se.waitOutput(regexp.MustCompile(`still-42`))
	se.stdin.Write([]byte("exit\n"))
	se.wait()

	waitFor(t, "the wtmp logout of "+tty, func() bool {
		for _, e := range wtmpSince(t, wtmpBefore) {
			if e.Type == 8 && e.Line == tty {
				return true
			}
		}
		return false
	})
	waitFor(t, "utmp to drop the session", func() bool { return !whoHas(a.name, tty) })
	waitFor(t, "the PAM session to close", func() bool {
		b, _ := os.ReadFile(pamLog)
		return strings.Contains(string(b), "close_session "+a.name)
	})
	waitFor(t, "the session keeper to exit after the last session", func() bool { return !alive(keeper) })
}

// whoHas reports whether who(1) lists user on tty.
func whoHas(user, tty string) bool {
	out, _ := exec.Command("who").Output()
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == user && f[1] == tty {
			return true
		}
	}
	return false
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func wtmpSince(t *testing.T, off int64) []*loginrec.Entry {
	b, err := os.ReadFile(loginrec.WtmpFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []*loginrec.Entry
	for i := off - off%384; i+384 <= int64(len(b)); i += 384 {
		if e, err := loginrec.Unmarshal(b[i : i+384]); err == nil {
			out = append(out, e)
		}
	}
	return out
}
