package auth_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// authInfoScript prints what a session sees of ExposeAuthInfo: the
// file's contents, mode and owner, then its path (on a line of its own,
// after a marker), or "none" without SSH_USER_AUTH.
const authInfoScript = `if [ -z "$SSH_USER_AUTH" ]; then echo none; exit; fi; cat "$SSH_USER_AUTH"; ` +
	`stat -c '%a %U' "$SSH_USER_AUTH"; echo "path=$SSH_USER_AUTH"`

// TestExposeAuthInfoLikeOpenSSH logs in to OpenSSH 9.2's sshd and to
// offload sshd (privilege-separated and in-process) with the same
// methods and ExposeAuthInfo yes, runs a command that reads
// $SSH_USER_AUTH, and wants the same contents, mode and owner from
// both; offload's file must be gone once the connection has ended.
// Without ExposeAuthInfo the variable is absent, whatever the client
// sends; a Match block turns it on for one user.
func TestExposeAuthInfoLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "ai-Secret-1")
	ask := askpass(t, f.dir, "ai-Secret-1", "000000")
	base := []string{"UsePAM yes", "PasswordAuthentication yes", "KbdInteractiveAuthentication yes"}
	// the client's own SSH_USER_AUTH, accepted, must give way to the server's
	spoof := []string{"-o", "SetEnv=SSH_USER_AUTH=/etc/passwd"}
	cases := []struct{ am, client string }{
		{"publickey", "publickey"},
		{"publickey,password", "publickey,password"},
		{"password,publickey", "password,publickey"},
		{"publickey,keyboard-interactive", "publickey,keyboard-interactive"},
	}
	for _, c := range cases {
		lines := append(append([]string(nil), base...), "AuthenticationMethods "+c.am, "AcceptEnv SSH_USER_AUTH")
		oport, olog := openSSHD(t, f, append(lines, "ExposeAuthInfo yes")...)
		want, _ := authInfoLogin(t, f, olog, oport, u.Username, ask, c.client, u.key, spoof...)
		t.Logf("OpenSSH, AuthenticationMethods %s:\n%s", c.am, want)
		if !strings.Contains(want, "publickey ssh-ed25519 AAAA") {
			t.Fatalf("OpenSSH's SSH_USER_AUTH for %s: %q (the test's premise)\n%s", c.am, want, olog)
		}
		for _, mode := range []string{"PrivilegeSeparation yes", "PrivilegeSeparation no"} {
			d := startOffloadDaemon(t, f, nil, nil, append(lines, mode, "ExposeAuthInfo yes")...)
			got, path := authInfoLogin(t, f, d.stderr, d.port, u.Username, ask, c.client, u.key, spoof...)
			if got != want {
				t.Errorf("AuthenticationMethods %s, %s: offload's SSH_USER_AUTH\n%q\nOpenSSH's\n%q\noffload log:\n%s", c.am, mode, got, want, d.stderr)
			}
			waitGone(t, path)
		}
	}
	t.Run("off", func(t *testing.T) {
		d := startOffloadDaemon(t, f, nil, nil, base...)
		got, _ := authInfoLogin(t, f, d.stderr, d.port, u.Username, ask, "publickey", u.key, spoof...)
		if got != "none\n" {
			t.Errorf("ExposeAuthInfo no: the session saw %q", got)
		}
	})
	t.Run("Match", func(t *testing.T) {
		d := startOffloadDaemon(t, f, nil, nil, append(base, "Match User "+u.Username, "ExposeAuthInfo yes")...)
		got, path := authInfoLogin(t, f, d.stderr, d.port, u.Username, ask, "publickey", u.key)
		if !strings.HasPrefix(got, "publickey ssh-ed25519 AAAA") {
			t.Errorf("ExposeAuthInfo yes in a Match block: the session saw %q\n%s", got, d.stderr)
		}
		waitGone(t, path)
	})
}

// authInfoLogin logs in with the methods given (a key, answers from
// askpass) to the server on port, whose log is server, and runs
// authInfoScript; it returns the output without the path line, and the
// path.
func authInfoLogin(t *testing.T, f *fixture, server fmt.Stringer, port, user, askpass, methods, key string, extra ...string) (string, string) {
	t.Helper()
	args := []string{"-F", "/dev/null", "-p", port, "-o", "PreferredAuthentications=" + methods,
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=VERBOSE",
		"-o", "NumberOfPasswordPrompts=1", "-o", "IdentitiesOnly=yes", "-i", key}
	args = append(append(args, extra...), "-l", user, "127.0.0.1", authInfoScript)
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.ssh, args...)
	cmd.Env = append(os.Environ(), "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ssh %s: %v: %s\nits stderr:\n%s\nthe server's log:\n%s", methods, err, out, stderr.String(), server)
	}
	text, path, _ := strings.Cut(string(out), "path=")
	return text, strings.TrimSpace(path)
}

// waitGone waits for the server to remove path after the connection's
// end (it does so as the connection closes, just after the client has
// its exit status).
func waitGone(t *testing.T, path string) {
	t.Helper()
	if path == "" {
		t.Error("no SSH_USER_AUTH path")
		return
	}
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%s still there 5 s after the connection ended", path)
}
