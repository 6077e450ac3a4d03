package connection

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/offload/offload/sshd/perm"
)

func TestShellFromPasswd(t *testing.T) {
	db := "# comment\n" + strings.Repeat("x", maxPasswdLine+10) + "\n" +
		"alice:x:1000:1000:Alice:/home/alice:/bin/zsh\n" +
		"bob:x:1001:1001::/home/bob:\n" +
		"bad:line\n"
	cases := map[string]string{"alice": "/bin/zsh", "bob": defaultShell}
	for name, want := range cases {
		if got, ok := shellFromPasswd(strings.NewReader(db), name); !ok || got != want {
			t.Errorf("%s: shell %q %v, want %q", name, got, ok, want)
		}
	}
	if _, ok := shellFromPasswd(strings.NewReader(db), "bad"); ok {
		t.Errorf("malformed entry accepted")
	}
}

// TestAccountCredential checks what a root server would set for a user,
// without needing a second account: the credential is computed for the
// current user as if the server were root.
func TestAccountCredential(t *testing.T) {
	name := self(t).User
	a, err := lookupAccount(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.cred == nil || a.cred.Uid != a.uid || a.cred.Gid != a.gid || !slices.Contains(a.cred.Groups, a.gid) {
		t.Errorf("credential %+v for uid %d gid %d", a.cred, a.uid, a.gid)
	}
	if a.home == "" || a.shell == "" {
		t.Errorf("home %q shell %q", a.home, a.shell)
	}
	// A non-root server can only serve its own account.
	if _, err := lookupAccount(name, int(a.uid)+12345); err == nil {
		t.Errorf("non-root server accepted a session for another uid")
	}
	if _, err := lookupAccount("no-such-user-offload", 0); err == nil {
		t.Errorf("unknown user accepted")
	}
}

// TestLoginShell runs a session with the real login shell from the
// user database and checks SHELL, HOME and the working directory.
func TestLoginShell(t *testing.T) {
	saved := shellOverride
	shellOverride = ""
	defer func() { shellOverride = saved }()
	p := self(t)
	want := loginShell(p.User)
	c := startClient(t, nil, p)
	ch := run(t, c, `echo "$SHELL|$HOME|$(pwd)|$LOGNAME"`, nil)
	home, _ := os.UserHomeDir()
	out := strings.TrimSpace(ch.stdout.String())
	if !strings.HasSuffix(out, want+"|"+home+"|"+home+"|"+p.User) {
		t.Errorf("session saw %q, want shell %s home %s", out, want, home)
	}
}

func TestUnknownUserRefused(t *testing.T) {
	c := startClient(t, nil, nil)
	ch := c.session(t)
	if ch.exec("true") {
		t.Errorf("exec without a user accepted")
	}
}

func TestRing(t *testing.T) {
	var r ring
	r.write(nil)
	buf := make([]byte, 10)
	for i := range 1000 {
		r.write([]byte(strings.Repeat(string(rune('a'+i%26)), i%7)))
		if r.len() > 5 {
			r.read(buf[:3])
		}
	}
	all := make([]byte, r.len())
	if n := r.read(all); n != len(all) || r.len() != 0 {
		t.Errorf("ring drained %d of %d", n, len(all))
	}
}

// TestRunAsNobody runs a session for the "nobody" account when the tests
// run as root: the child must get nobody's uid, gid and groups, "/" as
// its directory (nobody's home does not exist) and nobody's environment.
func TestRunAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	if _, err := lookupAccount("nobody", 0); err != nil {
		t.Skipf("no nobody account: %v", err)
	}
	c := startClient(t, nil, &perm.Permissions{User: "nobody"})
	ch := run(t, c, `echo "$(id -u) $(id -g) $(id -G) $(pwd) $USER $HOME"`, nil)
	out := strings.TrimSpace(ch.stdout.String())
	a, _ := lookupAccount("nobody", 0)
	want := fmt.Sprintf("%d %d", a.uid, a.gid)
	if !strings.HasPrefix(out, want+" ") || !strings.HasSuffix(out, " / nobody "+a.home) {
		t.Errorf("as nobody: %q (stderr %q), want %q ... / nobody %s", out, ch.stderr.String(), want, a.home)
	}
	if strings.Contains(out, " 0 ") {
		t.Errorf("root group kept: %q", out)
	}
}

// TestPTYAsNobody checks the terminal is handed to the user.
func TestPTYAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	if _, err := lookupAccount("nobody", 0); err != nil {
		t.Skipf("no nobody account: %v", err)
	}
	c := startClient(t, nil, &perm.Permissions{User: "nobody"})
	ch := c.session(t)
	ch.req("pty-req", true, ptyPayload("xterm", 80, 24, nil))
	ch.exec(`stat -c '%U %a' "$(tty)"; id -un`)
	ch.waitClosed(t)
	if out := ch.stdout.String(); !strings.Contains(out, "nobody 620") {
		t.Errorf("tty owner and mode: %q", out)
	}
}
