package auth_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/loginrec"
	"github.com/offload/offload/sshd/pam"
)

// pam_motd's message of the day (Debian's /etc/pam.d/sshd shows /etc/motd
// and /run/motd.dynamic so, with PrintMotd no in its sshd_config) reaches
// an interactive login, as with OpenSSH, and not a command's output.
func TestPAMMotd(t *testing.T) {
	testenv.Root(t)
	if !pam.Available {
		testenv.Missing(t, "PAM in this build", "build with cgo and libpam0g-dev")
	}
	if m, _ := filepath.Glob("/usr/lib/*/security/pam_motd.so"); len(m) == 0 {
		testenv.Missing(t, "pam_motd", "Debian package libpam-modules")
	}
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-motd-1")
	dir, err := os.MkdirTemp("", "oftmotd") // pam_motd reads it as the user
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	const text = "offload test: the message of the day"
	motd := filepath.Join(dir, "motd")
	os.WriteFile(motd, []byte(text+"\n"), 0o644)
	service := testenv.PAMService(t, "oftmotd", "auth required pam_unix.so\naccount required pam_permit.so\nsession required pam_permit.so\n"+
		"session optional pam_motd.so motd="+motd+" noupdate\n")
	for _, sep := range []string{"yes", "no"} {
		t.Run("PrivilegeSeparation "+sep, func(t *testing.T) { checkPAMMotd(t, f, u, service, sep, text) })
	}
}

// checkPAMMotd logs in as u with the pam_motd service, under
// PrivilegeSeparation sep.
func checkPAMMotd(t *testing.T, f *fixture, u *accountUser, service, sep, text string) {
	d := startOffloadDaemon(t, f, nil, nil, "UsePAM yes", "PAMServiceName "+service, "PrintMotd no", "PrivilegeSeparation "+sep)
	run := func(stdin string, extra ...string) string {
		ctx, cancel := testenv.Context(t)
		defer cancel()
		args := append(append([]string{"-i", u.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"}, extra...), sshArgs(d.port, u.Username)...)
		if stdin != "" {
			args = args[:len(args)-1] // a login shell, not sshArgs' true
		}
		cmd := exec.CommandContext(ctx, f.ssh, args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := run("exit\n", "-tt"); !strings.Contains(out, text) {
		t.Errorf("interactive login without pam_motd's text:\n%q\n%s", out, d.stderr)
	}
	if out := run(""); strings.Contains(out, text) {
		t.Errorf("a command's output holds the motd: %q", out)
	}
}

// With UsePAM yes the user's post-auth process is started by a root PAM
// session keeper; its pty sessions still get their utmp and wtmp login and
// logout entries (the monitor took the keeper's process for something
// else and refused its login records).
func TestLoginRecordsWithPAM(t *testing.T) {
	testenv.Root(t)
	wtmp := testenv.FirstFile(t, loginrec.WtmpFile, "the system's wtmp", loginrec.WtmpFile)
	if _, err := os.Stat(loginrec.UtmpFile); err != nil {
		if f, err := os.OpenFile(loginrec.UtmpFile, os.O_CREATE|os.O_WRONLY, 0o664); err == nil {
			f.Close() // systemd-tmpfiles makes it at boot
		}
	}
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-records-1")
	fi, err := os.Stat(wtmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, sep := range []string{"yes", "no"} { // Debian's /etc/pam.d/sshd, in both process models
		t.Run("PrivilegeSeparation "+sep, func(t *testing.T) { checkRecordsWithPAM(t, f, u, wtmp, fi.Size()-fi.Size()%384, sep) })
		if fi, err = os.Stat(wtmp); err != nil {
			t.Fatal(err)
		}
	}
}

// checkRecordsWithPAM logs in as u on a pty and looks for the wtmp
// entries past before.
func checkRecordsWithPAM(t *testing.T, f *fixture, u *accountUser, wtmp string, before int64, sep string) {
	d := startOffloadDaemon(t, f, nil, nil, "UsePAM yes", "PrivilegeSeparation "+sep)
	ctx, cancel := testenv.Context(t)
	defer cancel()
	args := append([]string{"-i", u.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "RequestTTY=force"}, sshArgs(d.port, u.Username)...)
	// The record is written just after the session's program starts (it
	// carries that program's pid; OpenSSH writes it before the exec), so
	// the session waits for it rather than racing it.
	args[len(args)-1] = "tty; for i in $(seq 50); do who | grep -q '^" + u.Username + " ' && break; sleep 0.1; done; who"
	out, err := exec.CommandContext(ctx, f.ssh, args...).CombinedOutput()
	fields := strings.Fields(string(out))
	if err != nil || len(fields) < 2 || !strings.HasPrefix(fields[0], "/dev/pts/") {
		t.Fatalf("pty session: %v: %q\n%s", err, out, d.stderr)
	}
	tty := strings.TrimPrefix(fields[0], "/dev/")
	if !strings.Contains(string(out), u.Username+" ") {
		t.Errorf("who inside the session does not list %s: %q", u.Username, out)
	}
	var login, logout bool
	for i := 0; i < 100 && !(login && logout); i++ {
		for _, e := range wtmpEntries(t, wtmp, before) {
			login = login || (e.Type == 7 && e.User == u.Username && e.Line == tty && e.Host == "127.0.0.1")
			logout = logout || (e.Type == 8 && e.Line == tty)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !login || !logout {
		t.Errorf("wtmp login %v, logout %v for %s on %s\n%s", login, logout, u.Username, tty, d.stderr)
	}
}

// The PAM session is opened before the user's first process and closed
// after the last, as root (pam_exec records both, with PAM_USER), in
// order; with PostauthPerConnection when the connection ends.
func TestPAMSessionOpenAndClose(t *testing.T) {
	testenv.Root(t)
	if !pam.Available {
		testenv.Missing(t, "PAM in this build", "build with cgo and libpam0g-dev")
	}
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-session-1")
	dir, err := os.MkdirTemp("", "oftsess")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755) // the session reads the record as the user
	record := filepath.Join(dir, "record")
	script := filepath.Join(dir, "record.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho \"$PAM_TYPE $PAM_USER $(id -u)\" >> "+record+"\n"), 0o700)
	service := testenv.PAMService(t, "oftsess", "auth required pam_unix.so\naccount required pam_permit.so\nsession required pam_exec.so "+script+"\n")
	d := startOffloadDaemon(t, f, nil, nil, "UsePAM yes", "PAMServiceName "+service, "PostauthPerConnection yes")
	ctx, cancel := testenv.Context(t)
	defer cancel()
	args := append([]string{"-i", u.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"}, sshArgs(d.port, u.Username)...)
	args[len(args)-1] = "cat " + record
	out, err := exec.CommandContext(ctx, f.ssh, args...).CombinedOutput()
	if want := "open_session " + u.Username + " 0"; err != nil || strings.TrimSpace(string(out)) != want {
		t.Fatalf("inside the session the record is %q (%v), want %q\n%s", out, err, want, d.stderr)
	}
	want := "open_session " + u.Username + " 0\nclose_session " + u.Username + " 0\n"
	var got []byte
	// PostauthPerConnection: the process, and so the session, ends with
	// its connection, not a Linger (10 s) later
	for i := 0; i < 100; i++ {
		if got, _ = os.ReadFile(record); string(got) == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("PAM session record %q, want %q\n%s", got, want, d.stderr)
}
