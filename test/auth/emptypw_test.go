package auth_test

import (
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// An account without a password (passwd -d) and an OpenSSH client that
// asks for nothing (BatchMode, no key): OpenSSH's sshd logs it in by the
// "none" method when PermitEmptyPasswords and PasswordAuthentication are
// on, with and without PAM (Debian's /etc/pam.d/sshd: pam_unix nullok);
// offload sshd must do the same, and refuse it when they are off.
func TestEmptyPasswordLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "")
	testenv.Run(t, "passwd", "-d", u.Username)
	for _, usePAM := range []string{"no", "yes"} {
		for _, permit := range []string{"yes", "no"} {
			lines := []string{"UsePAM " + usePAM, "PermitEmptyPasswords " + permit, "PasswordAuthentication yes",
				"KbdInteractiveAuthentication no"}
			oport, olog := openSSHD(t, f, lines...)
			d := startOffloadDaemon(t, f, nil, nil, lines...)
			want := runOutcome(t, nil, f.ssh, sshArgs(oport, u.Username, "-o", "BatchMode=yes", "-o", "PubkeyAuthentication=no")...)
			got := runOutcome(t, nil, f.ssh, sshArgs(d.port, u.Username, "-o", "BatchMode=yes", "-o", "PubkeyAuthentication=no")...)
			t.Logf("UsePAM %s, PermitEmptyPasswords %s: OpenSSH %q, offload %q", usePAM, permit, want, got)
			if got != want {
				t.Errorf("UsePAM %s, PermitEmptyPasswords %s: offload %q, OpenSSH %q\nOpenSSH:\n%s\noffload:\n%s",
					usePAM, permit, got, want, olog, d.stderr)
			}
		}
	}
}
