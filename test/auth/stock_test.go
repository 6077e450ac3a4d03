package auth_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/pam"
)

// stockServer is a server started on a copy of Debian's stock
// sshd_config.
type stockServer struct {
	name, port string
	log        *sshtest.LogBuffer
}

// stockConfig copies Debian's stock sshd_config (the file
// openssh-server ships) into f.dir, changing only where it listens, the
// host key and the pid file, and its Include, which names an empty
// directory instead of /etc/ssh/sshd_config.d (this machine's drop-ins
// are not the test's). extra lines go after those (offload's own).
func stockConfig(t *testing.T, f *fixture, port string, extra ...string) string {
	t.Helper()
	stock := testenv.FirstFile(t, "Debian's stock sshd_config", "apt-get install openssh-server", "/usr/share/openssh/sshd_config")
	b, err := os.ReadFile(stock)
	if err != nil {
		t.Fatal(err)
	}
	dropins := filepath.Join(f.dir, "sshd_config.d")
	os.MkdirAll(dropins, 0o755)
	text := strings.ReplaceAll(string(b), "/etc/ssh/sshd_config.d", dropins)
	if !strings.Contains(text, "UsePAM yes") || !strings.Contains(text, "KbdInteractiveAuthentication no") ||
		strings.Contains(text, "\nPasswordAuthentication") {
		t.Fatalf("%s is not the stock file this test expects:\n%s", stock, b)
	}
	hostKey := filepath.Join(f.dir, "ssh_host_ed25519_key")
	if _, err := os.Stat(hostKey); err != nil {
		f.run(f.gen, "-q", "-t", "ed25519", "-N", "", "-f", hostKey)
	}
	head := append([]string{"Port " + port, "ListenAddress 127.0.0.1", "HostKey " + hostKey, "PidFile none"}, extra...)
	path := filepath.Join(f.dir, "sshd_config."+port)
	if err := os.WriteFile(path, []byte(strings.Join(head, "\n")+"\n"+text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startStock runs bin (OpenSSH's sshd or offload sshd, with args before
// the sshd flags) in the foreground, logging to stderr, on a stock
// configuration, with -o overrides.
func startStock(t *testing.T, f *fixture, name, bin string, args []string, overrides []string, extra ...string) *stockServer {
	t.Helper()
	var s *stockServer
	testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		s = &stockServer{name: name, port: port, log: &sshtest.LogBuffer{}}
		cfg := stockConfig(t, f, port, extra...)
		argv := append(append([]string(nil), args...), "-D", "-e", "-f", cfg)
		for _, o := range overrides {
			argv = append(argv, "-o", o)
		}
		cmd := f.command(bin, argv...)
		cmd.Stdout, cmd.Stderr = s.log, s.log
		return testenv.Launch{Cmd: cmd, Output: s.log, Listens: func() bool { return saysListening(s.log.String(), port) }}
	})
	return s
}

// saysListening reports whether a server's log says it listens on port
// of 127.0.0.1: OpenSSH's line, or offload's.
func saysListening(log, port string) bool {
	return strings.Contains(log, "Server listening on 127.0.0.1 port "+port+".") ||
		strings.Contains(log, "listening addr=127.0.0.1:"+port)
}

// clientRun runs an OpenSSH client program (ssh, sftp) with env, and
// returns its stdout and exit code.
func clientRun(t *testing.T, env []string, stdin string, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String() + errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

var clientOpts = []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
	"-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10", "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"}

// ptyOutcome runs tty(1) in a pty (ssh -tt) logged in by key.
func ptyOutcome(t *testing.T, f *fixture, port string, u *accountUser) string {
	out, code := clientRun(t, nil, "", f.ssh, append(clientOpts, "-tt", "-i", u.key, "-p", port, "-l", u.Username, "127.0.0.1", "tty")...)
	if code != 0 || !strings.HasPrefix(out, "/dev/pts/") {
		return "no pty: " + out
	}
	return "pty"
}

// sftpOutcome puts a file and gets it back with sftp(1), by key.
func sftpOutcome(t *testing.T, f *fixture, sftp, port string, u *accountUser) string {
	local := filepath.Join(f.dir, "sftp-"+port+"-"+u.Username)
	os.WriteFile(local, []byte("stock sftp "+u.Username+"\n"), 0o644)
	batch := "put " + local + " upload\nget upload " + local + ".back\nrm upload\n"
	out, code := clientRun(t, nil, batch, sftp, append(clientOpts, "-b", "-", "-i", u.key, "-P", port, u.Username+"@127.0.0.1")...)
	back, _ := os.ReadFile(local + ".back")
	os.Remove(local + ".back")
	if code != 0 || string(back) != "stock sftp "+u.Username+"\n" {
		return "sftp failed: " + out
	}
	return "sftp"
}

// TestDebianStockConfigLikeOpenSSH runs Debian's stock sshd_config (UsePAM
// yes, KbdInteractiveAuthentication no, passwords on by the default) with
// OpenSSH 9.2's sshd and offload sshd, and the same throwaway users log in
// to each with a key, with a password through PAM (sshpass), in a pty and
// with sftp: the outcomes are the same, and those OpenSSH's defaults
// promise. Then again with UsePAM no (passwords from the shadow file).
// The accounts: a normal one, one whose password is empty (refused:
// PermitEmptyPasswords no), and one with uid 0 (PermitRootLogin
// prohibit-password: its key logs in, its password does not).
func TestDebianStockConfigLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	if !pam.Available {
		testenv.Missing(t, "PAM in this build", "build with cgo and libpam0g-dev")
	}
	f := newFixture(t)
	sshd := testenv.FirstFile(t, "/usr/sbin/sshd", "Debian package openssh-server", "/usr/sbin/sshd")
	os.MkdirAll("/run/sshd", 0o755)
	sshpass := testenv.LookPath(t, "sshpass", "Debian package sshpass")
	sftp := testenv.LookPath(t, "sftp", "Debian package openssh-client")
	bin := testenv.OffloadBinary(t)
	normal := newAccountUser(t, f, "stock-pw")
	empty := newAccountUser(t, f, "")
	testenv.Run(t, "passwd", "-d", empty.Username)
	root := newAccountUser(t, f, "stock-root-pw", "-o", "-u", "0")
	type check struct {
		name, want string
		run        func(port string) string
	}
	checks := []check{
		{"key", "ok", func(p string) string { return outcome(t, f, p, normal.Username, normal.key) }},
		{"password", "ok", func(p string) string { return passwordOutcome(t, f, sshpass, p, normal.Username, "stock-pw") }},
		{"wrong password", "denied", func(p string) string { return passwordOutcome(t, f, sshpass, p, normal.Username, "not-it") }},
		{"pty", "pty", func(p string) string { return ptyOutcome(t, f, p, normal) }},
		{"sftp", "sftp", func(p string) string { return sftpOutcome(t, f, sftp, p, normal) }},
		{"empty password", "denied", func(p string) string { return passwordOutcome(t, f, sshpass, p, empty.Username, "") }},
		{"uid 0 key", "ok", func(p string) string { return outcome(t, f, p, root.Username, root.key) }},
		{"uid 0 password", "denied", func(p string) string {
			return passwordOutcome(t, f, sshpass, p, root.Username, "stock-root-pw")
		}},
	}
	for _, overrides := range [][]string{nil, {"UsePAM=no"}} {
		o := startStock(t, f, "OpenSSH", sshd, nil, overrides)
		d := startStock(t, f, "offload", bin, []string{"sshd", "-shutdown-timeout", "2s"}, overrides,
			"PerSourcePenalties no", "CalibrationCache none")
		for _, c := range checks {
			t.Run(strings.Join(append(overrides, "stock"), " ")+"/"+c.name, func(t *testing.T) {
				t.Parallel() // PAM's failure delays
				want, got := c.run(o.port), c.run(d.port)
				t.Logf("OpenSSH %q, offload %q", want, got)
				if want != c.want {
					t.Errorf("OpenSSH %q, expected %q (the test's premise)\nOpenSSH log:\n%s", want, c.want, o.log)
				}
				if got != want {
					t.Errorf("offload %q, OpenSSH %q\noffload log:\n%s", got, want, d.log)
				}
			})
		}
	}
}
