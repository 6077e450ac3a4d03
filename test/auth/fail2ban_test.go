package auth_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
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
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, sshpass, "-e", f.ssh, "-F", "/dev/null", "-p", port,
		"-o", "PreferredAuthentications=password", "-o", "PubkeyAuthentication=no", "-o", "NumberOfPasswordPrompts=1",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-l", name, "127.0.0.1", "true")
	cmd.Env = append(os.Environ(), "SSHPASS="+password)
	return cmd.Run() == nil
}

// tooManyPasswords tries a wrong password four times on one connection
// (SSH_ASKPASS answers each prompt), more than MaxAuthTries 3 allows.
func tooManyPasswords(t *testing.T, f *fixture, port, name string) {
	t.Helper()
	ask := askpass(t, f.dir, "wrong-pw", "000000")
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.ssh, sshArgs(port, name, "-o", "PreferredAuthentications=password",
		"-o", "PubkeyAuthentication=no", "-o", "NumberOfPasswordPrompts=4")...)
	cmd.Env = append(os.Environ(), "SSH_ASKPASS="+ask, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	if err := cmd.Run(); err == nil {
		t.Fatal("a wrong password logged in")
	}
}

// fail2banFailures runs the stock sshd filter in a mode (normal, ddos,
// extra, aggressive) over a log file and returns the users of the
// failures it records, sorted (fail2ban-regex -o row prints one row per
// failure; lines it matches as no-failure, such as "Accepted", print
// none).
func fail2banFailures(t *testing.T, regex, path, mode string) []string {
	t.Helper()
	out, err := exec.Command(regex, "-o", "row", path, "sshd[mode="+mode+"]").CombinedOutput()
	if err != nil {
		t.Fatalf("fail2ban-regex: %v\n%s", err, out)
	}
	var rows []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "['") {
			user := "?"
			if m := rowUser.FindStringSubmatch(l); m != nil {
				user = m[1]
			}
			rows = append(rows, user)
		}
	}
	sort.Strings(rows)
	return rows
}

var rowUser = regexp.MustCompile(`'user': '([^']*)'`)

// sameLines are OpenSSH's lines that offload's log must hold as often as
// OpenSSH's for the same logins.
var sameLines = []*regexp.Regexp{
	regexp.MustCompile(`(?m)Failed password for \S+ from 127\.0\.0\.1 port \d+ ssh2\r?$`),
	regexp.MustCompile(`(?m)Failed password for invalid user \S+ from 127\.0\.0\.1 port \d+ ssh2\r?$`),
	regexp.MustCompile(`(?m)Invalid user \S+ from 127\.0\.0\.1 port \d+\r?$`),
	regexp.MustCompile(`(?m)User \S+ from 127\.0\.0\.1 not allowed because listed in DenyUsers\r?$`),
	regexp.MustCompile(`(?m)Connection closed by authenticating user \S+ 127\.0\.0\.1 port \d+ \[preauth\]\r?$`),
	regexp.MustCompile(`(?m)Connection closed by invalid user \S+ 127\.0\.0\.1 port \d+ \[preauth\]\r?$`),
	regexp.MustCompile(`(?m)maximum authentication attempts exceeded for \S+ from 127\.0\.0\.1 port \d+ ssh2 \[preauth\]\r?$`),
	regexp.MustCompile(`(?m)Disconnecting authenticating user \S+ 127\.0\.0\.1 port \d+: Too many authentication failures \[preauth\]\r?$`),
	regexp.MustCompile(`(?m)Accepted password for \S+ from 127\.0\.0\.1 port \d+ ssh2\r?$`),
	regexp.MustCompile(`(?m)Received disconnect from 127\.0\.0\.1 port \d+:11: disconnected by user\r?$`),
	regexp.MustCompile(`(?m)Disconnected from user \S+ 127\.0\.0\.1 port \d+\r?$`),
}

// syslogPrefixed gives each line of log the prefix rsyslog writes and
// journalctl prints ("Dec  4 16:40:00 testhost sshd[4242]: "), as for a
// program whose stderr journald reads under the identifier sshd.
func syslogPrefixed(log string, pid int) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		fmt.Fprintf(&b, "%s testhost sshd[%d]: %s\n", time.Now().Format(time.Stamp), pid, line)
	}
	return b.Bytes()
}

// TestFail2banSeesWhatItSeesInOpenSSH runs one sequence of logins — wrong
// passwords, an invalid user, a user in DenyUsers, a wrong key, too many
// wrong passwords on one connection, a right password — against
// OpenSSH's sshd and against offload, and runs fail2ban's stock sshd
// filter in each of its modes over both logs: it must record the same
// failures, user by user, in offload's as in OpenSSH's (given the syslog
// prefix journald or rsyslog adds). offload runs as the real program,
// with privilege separation and without, its log written with -E and to
// a stderr that journald would read (JOURNAL_STREAM set), and as the
// server in this process with sshlog's syslog format.
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
		tooManyPasswords(t, f, port, good.Username)
		if !passwordLogin(t, f, sshpass, port, good.Username, "right-pw-1") {
			t.Fatal("the right password did not log in")
		}
		time.Sleep(300 * time.Millisecond) // let the server write its last lines
	}
	settings := []string{"LogLevel INFO", "UsePAM no", "PasswordAuthentication yes", "KbdInteractiveAuthentication no",
		"MaxAuthTries 3", "DenyUsers " + denied.Username}

	oport, olog := openSSHD(t, f, settings...)
	sequence(oport)
	opath := filepath.Join(f.dir, "openssh.log")
	os.WriteFile(opath, syslogPrefixed(olog.String(), 4242), 0o600)

	logs := map[string]string{}
	for _, sep := range []string{"yes", "no"} {
		path := filepath.Join(f.dir, "offload-E-"+sep+".log")
		d := startOffloadDaemon(t, f, []string{"-E", path}, nil, append(settings, "PrivilegeSeparation "+sep)...)
		sequence(d.port)
		logs["-E, PrivilegeSeparation "+sep] = path
	}
	d := startOffloadDaemon(t, f, nil, []string{"JOURNAL_STREAM=8:4242"}, settings...)
	sequence(d.port)
	jpath := filepath.Join(f.dir, "offload-journal.log")
	os.WriteFile(jpath, syslogPrefixed(d.stderr.String(), d.pid), 0o600)
	logs["stderr under journald"] = jpath

	fpath := filepath.Join(f.dir, "offload-inprocess.log")
	lf, err := os.Create(fpath)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	a := &auth.Config{PasswordAuthentication: true, DenyUsers: []string{denied.Username}, MaxAuthTries: 3,
		Logger: slog.New(sshlog.NewHandler(lf, &sshlog.Options{Format: sshlog.Syslog, Host: "testhost"}))}
	fport, _ := offloadSSHD(t, a)
	sequence(fport)
	logs["in-process server"] = fpath

	for name, path := range logs {
		b, _ := os.ReadFile(path)
		for _, re := range sameLines {
			if want, got := len(re.FindAllString(olog.String(), -1)), len(re.FindAll(b, -1)); got != want {
				t.Errorf("%s: %d lines match %s, %d in OpenSSH's log\noffload:\n%s", name, got, re, want, b)
			}
		}
	}
	for _, mode := range []string{"normal", "ddos", "extra", "aggressive"} {
		want := fail2banFailures(t, regex, opath, mode)
		if mode == "normal" && len(want) < 10 {
			t.Fatalf("fail2ban found only %d failures in OpenSSH's log:\n%s", len(want), olog)
		}
		for name, path := range logs {
			got := fail2banFailures(t, regex, path, mode)
			t.Logf("mode %s, %s: %d failures (OpenSSH %d)", mode, name, len(got), len(want))
			if strings.Join(got, " ") != strings.Join(want, " ") {
				b, _ := os.ReadFile(path)
				t.Errorf("mode %s, %s: fail2ban records failures of\n%v\nin offload's log, of\n%v\nin OpenSSH's\nOpenSSH:\n%s\noffload:\n%s",
					mode, name, got, want, olog, b)
			}
		}
	}
}
