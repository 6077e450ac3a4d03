package auth_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/sshlog"
)

// passwordLogin runs ssh with password authentication only, the password
// given by sshpass through the environment (never on a command line).
func passwordLogin(t *testing.T, f *fixture, sshpass, port, name, password string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sshpass, "-e", f.ssh, "-F", "/dev/null", "-p", port,
		"-o", "PreferredAuthentications=password", "-o", "PubkeyAuthentication=no", "-o", "NumberOfPasswordPrompts=1",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-l", name, "127.0.0.1", "true")
	cmd.Env = append(os.Environ(), "SSHPASS="+password)
	return cmd.Run() == nil
}

// fail2banFailures runs the stock sshd filter over a log file and
// returns the failures it records (fail2ban-regex -o row prints one row
// per failure; lines it matches as no-failure, such as "Accepted" or
// "Connection closed", print none).
func fail2banFailures(t *testing.T, regex, path string) []string {
	t.Helper()
	out, err := exec.Command(regex, "-o", "row", path, "sshd").CombinedOutput()
	if err != nil {
		t.Fatalf("fail2ban-regex: %v\n%s", err, out)
	}
	var rows []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "['") {
			rows = append(rows, l)
		}
	}
	return rows
}

// TestFail2banSeesWhatItSeesInOpenSSH runs one sequence of logins — wrong
// passwords, an invalid user, a user in DenyUsers, a wrong key, a right
// password — against OpenSSH's sshd and against offload, and runs
// fail2ban's stock sshd filter over both logs: it must count the same
// failures in offload's (sshlog's syslog format, as -E writes it) as in
// OpenSSH's (given the syslog prefix journald or rsyslog would add).
func TestFail2banSeesWhatItSeesInOpenSSH(t *testing.T) {
	testenv.Root(t)
	sshpass := testenv.LookPath(t, "sshpass", "Debian package sshpass")
	regex := testenv.LookPath(t, "fail2ban-regex", "Debian package fail2ban")
	f := newFixture(t)
	good := newAccountUser(t, f, "right-pw-1")
	denied := newAccountUser(t, f, "right-pw-2")
	stranger := f.keygen("id_stranger", "ed25519")

	sequence := func(port string) {
		for i := 0; i < 3; i++ {
			if passwordLogin(t, f, sshpass, port, good.Username, "wrong-pw") {
				t.Fatal("a wrong password logged in")
			}
		}
		passwordLogin(t, f, sshpass, port, "oftnosuchuser", "whatever")
		passwordLogin(t, f, sshpass, port, denied.Username, "right-pw-2")
		outcome(t, f, port, good.Username, stranger)
		if !passwordLogin(t, f, sshpass, port, good.Username, "right-pw-1") {
			t.Fatal("the right password did not log in")
		}
	}

	oport, olog := openSSHD(t, f, "LogLevel INFO", "UsePAM no", "PasswordAuthentication yes", "KbdInteractiveAuthentication no", "DenyUsers "+denied.Username)
	sequence(oport)
	time.Sleep(200 * time.Millisecond) // let sshd write its last lines
	var prefixed bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(olog.String()), "\n") {
		prefixed.WriteString(time.Now().Format(time.Stamp) + " testhost sshd[4242]: " + line + "\n")
	}
	opath := filepath.Join(f.dir, "openssh.log")
	os.WriteFile(opath, prefixed.Bytes(), 0o600)

	fpath := filepath.Join(f.dir, "offload.log")
	lf, err := os.Create(fpath)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	a := &auth.Config{PasswordAuthentication: true, DenyUsers: []string{denied.Username},
		Logger: slog.New(sshlog.NewHandler(lf, &sshlog.Options{Format: sshlog.Syslog, Host: "testhost"}))}
	fport, _ := offloadSSHD(t, a)
	sequence(fport)

	want, got := len(fail2banFailures(t, regex, opath)), len(fail2banFailures(t, regex, fpath))
	t.Logf("fail2ban's sshd filter: %d failures in OpenSSH's log, %d in offload's", want, got)
	if want < 7 || got != want {
		t.Logf("OpenSSH rows:\n%s\noffload rows:\n%s", strings.Join(fail2banFailures(t, regex, opath), "\n"), strings.Join(fail2banFailures(t, regex, fpath), "\n"))
		off, _ := os.ReadFile(fpath)
		os.WriteFile("/tmp/offload-f2b.log", off, 0o600)
		t.Fatalf("fail2ban found %d failures in offload's log, %d in OpenSSH's\nOpenSSH:\n%s\noffload:\n%s", got, want, prefixed.String(), off)
	}
}
