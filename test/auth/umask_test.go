package auth_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/pam"
)

// A session's file-creation mask is the one pam_umask sets in the PAM
// session (OpenSSH's sessions inherit it from the process that opened
// the session), else UMASK from /etc/login.defs.
func TestPAMUmask(t *testing.T) {
	testenv.Root(t)
	if !pam.Available {
		testenv.Missing(t, "PAM in this build", "build with cgo and libpam0g-dev")
	}
	if m, _ := filepath.Glob("/usr/lib/*/security/pam_umask.so"); len(m) == 0 {
		testenv.Missing(t, "pam_umask", "Debian package libpam-modules")
	}
	f := newFixture(t)
	u := newAccountUser(t, f, "")
	for _, tc := range []struct{ session, want, sep string }{
		{"session optional pam_umask.so umask=0027\n", "0027", "yes"},
		{"", loginDefsUmask(t), "yes"},
		{"session optional pam_umask.so umask=0027\n", "0027", "no"}, // the in-process keeper's
		{"", loginDefsUmask(t), "no"},
	} {
		service := testenv.PAMService(t, "oftumask", "auth required pam_unix.so\naccount required pam_permit.so\nsession required pam_permit.so\n"+tc.session)
		d := startOffloadDaemon(t, f, nil, nil, "UsePAM yes", "PAMServiceName "+service, "PrivilegeSeparation "+tc.sep)
		ctx, cancel := testenv.Context(t)
		args := append([]string{"-i", u.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"}, sshArgs(d.port, u.Username)...)
		args[len(args)-1] = "umask" // the command, in place of sshArgs' true
		out, err := exec.CommandContext(ctx, f.ssh, args...).CombinedOutput()
		cancel()
		if got := strings.TrimSpace(string(out)); err != nil || got != tc.want {
			t.Errorf("PrivilegeSeparation %s, PAM session %q: umask %q (%v), want %s\n%s", tc.sep, tc.session, got, err, tc.want, d.stderr)
		}
	}
}

// loginDefsUmask is UMASK from /etc/login.defs, as umask prints it.
func loginDefsUmask(t *testing.T) string {
	b, _ := os.ReadFile("/etc/login.defs")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "UMASK" {
			if n, err := strconv.ParseUint(f[1], 8, 32); err == nil {
				return fmt.Sprintf("%04o", n)
			}
		}
	}
	return "0022"
}
