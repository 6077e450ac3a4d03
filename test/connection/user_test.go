package connection_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// throwawayUser creates a user (removed at the end of the test) with a
// home directory in a temp dir, and returns its name and home.
func throwawayUser(t *testing.T) (string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if testenv.Required() {
			t.Fatal("needs root to create a throwaway user, and OFFLOAD_REQUIRE_TOOLS=1")
		}
		t.Skip("needs root to create a throwaway user")
	}
	useradd := testenv.LookPath(t, "useradd", "apt-get install passwd")
	b := make([]byte, 4)
	rand.Read(b)
	name := "oft" + hex.EncodeToString(b)
	base, err := os.MkdirTemp("", "offload-user-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755)
	home := filepath.Join(base, name)
	if out, err := exec.Command(useradd, "-m", "-d", home, "-s", "/bin/sh", "-p", "*", name).CombinedOutput(); err != nil { // "*": no password, not locked
		os.RemoveAll(base)
		t.Fatalf("useradd: %v %s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("userdel", "-r", name).Run()
		os.RemoveAll(base)
	})
	return name, home
}

// TestForwardingAsAnotherUser: a root server in the in-process mode
// serving an ordinary user refuses privileged ports and Unix socket
// forwarding (root would do them for the user), forwards unprivileged
// ports, and makes the agent socket the user's.
func TestForwardingAsAnotherUser(t *testing.T) {
	name, _ := throwawayUser(t)
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	f := newFixture(t, nil)
	f.user = name
	// authorized_keys is read as the target user: let it reach the file.
	for _, p := range []string{filepath.Dir(f.dir), f.dir, filepath.Join(f.dir, "authorized_keys")} {
		os.Chmod(p, 0o755)
	}
	echo := echoServer(t)
	_, errOut, code := f.ssh(t, nil, nil, "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:80:"+echo, "true")
	if code == 0 || !strings.Contains(errOut, "remote port forwarding failed for listen port 80") {
		t.Errorf("-R 80 as %s: code %d, stderr %q", name, code, errOut)
	}
	if !strings.Contains(f.logs.String(), "port 80 is privileged") {
		t.Errorf("no log of the privileged port refusal")
	}
	b := f.sshBackground(t, nil, "-N", "-o", "ExitOnForwardFailure=yes", "-R", "0:"+echo, "")
	m := b.waitLine(t, `Allocated port (\d+) for remote forward to`)
	roundTrip(t, dialRetry(t, "tcp", "127.0.0.1:"+m[1]), "unprivileged port")
	sock := filepath.Join(t.TempDir(), "s.sock")
	_, errOut, code = f.ssh(t, nil, nil, "-o", "ExitOnForwardFailure=yes", "-R", sock+":"+echo, "true")
	if code == 0 {
		t.Errorf("Unix socket forwarding as root for %s: %q", name, errOut)
	}
	agentSock := startAgent(t, f)
	out, errOut, code := f.ssh(t, nil, []string{"SSH_AUTH_SOCK=" + agentSock}, "-A",
		`id -u; stat -c '%u %a' "$(dirname "$SSH_AUTH_SOCK")" "$SSH_AUTH_SOCK"; ssh-add -l >/dev/null && echo listed`)
	want := strconv.Itoa(uid) + "\n" + strconv.Itoa(uid) + " 700\n" + strconv.Itoa(uid) + " 600\nlisted\n"
	if out != want || code != 0 {
		t.Errorf("agent as %s: %q (stderr %q, code %d), want %q", name, out, errOut, code, want)
	}

}
