package testenv

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Root skips t, or fails it under OFFLOAD_REQUIRE_TOOLS=1, unless the test
// runs as root.
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "root", "run the test as root: it creates system users or files")
	}
}

// UniqueName returns prefix followed by random hex digits, at most 31
// characters: a name for a throwaway user, group or PAM service.
func UniqueName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	n := prefix + hex.EncodeToString(b)
	if len(n) > 31 {
		n = n[:31]
	}
	return n
}

// NewUser creates a throwaway user with useradd (a home directory, shell
// /bin/sh, extra arguments appended), removes it with userdel -r when the
// test ends and returns it. It needs root (see Root).
func NewUser(t testing.TB, args ...string) *user.User {
	t.Helper()
	return AddUser(t, append([]string{"-m", "-s", "/bin/sh"}, args...)...)
}

// AddUser is NewUser with exactly the useradd arguments given (no home
// directory made without -m). The user's comment field names this
// process, so that a later test process removes it if this one dies
// before its cleanup runs (killed by go test -timeout, say).
func AddUser(t testing.TB, args ...string) *user.User {
	t.Helper()
	Root(t)
	LookPath(t, "useradd", "Debian package passwd")
	sweepOnce.Do(sweepStaleUsers)
	name := UniqueName("oft")
	argv := append(append([]string{"-c", ownerStamp(os.Getpid())}, args...), name)
	if out, err := retryLocked("useradd", argv...); err != nil {
		t.Fatalf("useradd %s: %v: %s", strings.Join(argv, " "), err, out)
	}
	t.Cleanup(func() {
		if out, err := retryLocked("userdel", "-r", "-f", name); err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("lookup of new user %s: %v", name, err)
	}
	return u
}

const stampPrefix = "offload-test pid="

func ownerStamp(pid int) string { return stampPrefix + strconv.Itoa(pid) }

var sweepOnce sync.Once

// sweepStaleUsers removes the throwaway users of test processes that are
// gone. A user whose process still runs (another package's test binary)
// is left alone.
func sweepStaleUsers() {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return
	}
	for _, name := range staleUsers(string(b), processAlive) {
		retryLocked("userdel", "-r", "-f", name)
	}
}

// staleUsers returns the users in passwd (the /etc/passwd format) whose
// comment is an owner stamp naming a process for which alive is false.
func staleUsers(passwd string, alive func(pid int) bool) []string {
	var names []string
	for _, line := range strings.Split(passwd, "\n") {
		f := strings.Split(line, ":")
		if len(f) < 5 || !strings.HasPrefix(f[4], stampPrefix) {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(f[4], stampPrefix))
		if err == nil && pid > 0 && !alive(pid) {
			names = append(names, f[0])
		}
	}
	return names
}

func processAlive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// SetPassword sets u's password with chpasswd (the password never appears
// in a command line).
func SetPassword(t testing.TB, name, password string) {
	t.Helper()
	if out, err := retryLockedInput(name+":"+password+"\n", "chpasswd"); err != nil {
		t.Fatalf("chpasswd for %s: %v: %s", name, err, out)
	}
}

// Run runs a command that must succeed (usermod, chage, ...), failing t
// with its output otherwise.
func Run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := retryLocked(name, args...); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// retryLocked runs a shadow-utils command, again while another process
// (a test package running in parallel) holds the passwd or shadow lock.
func retryLocked(name string, args ...string) ([]byte, error) {
	return retryLockedInput("", name, args...)
}

func retryLockedInput(stdin, name string, args ...string) ([]byte, error) {
	for i := 0; ; i++ {
		cmd := exec.Command(name, args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err == nil || i == 50 || !bytes.Contains(out, []byte("lock")) {
			return out, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
