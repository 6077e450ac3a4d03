package auth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// nologinNamespace makes the servers f starts run in a mount namespace of
// their own where /etc/nologin says msg and root's authorized_keys holds
// rootKey's public key (overlays on /etc and /root: the machine's own
// files, and other tests, are untouched).
func nologinNamespace(t *testing.T, f *fixture, msg, rootKey string) {
	t.Helper()
	testenv.LookPath(t, "unshare", "Debian package util-linux")
	base := t.TempDir()
	dirs := map[string]string{}
	for _, d := range []string{"etc-up", "etc-work", "root-up", "root-work"} {
		dirs[d] = filepath.Join(base, d)
		os.Mkdir(dirs[d], 0o700)
	}
	os.Chmod(dirs["etc-up"], 0o755) // the merged /etc's mode: everyone reads it
	os.WriteFile(filepath.Join(dirs["etc-up"], "nologin"), []byte(msg+"\n"), 0o644)
	ssh := filepath.Join(dirs["root-up"], ".ssh")
	os.Mkdir(ssh, 0o700)
	pub, _ := os.ReadFile(rootKey + ".pub")
	os.WriteFile(filepath.Join(ssh, "authorized_keys"), pub, 0o600)
	script := "mount -t overlay overlay -o lowerdir=/etc,upperdir=" + dirs["etc-up"] + ",workdir=" + dirs["etc-work"] + " /etc && " +
		"mount -t overlay overlay -o lowerdir=/root,upperdir=" + dirs["root-up"] + ",workdir=" + dirs["root-work"] + " /root && " +
		`exec "$@"`
	f.wrap = []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"}
}

// TestNologinLikeOpenSSH: with /etc/nologin, a user's key login is refused
// and root's is not, with the file's text shown to the refused client,
// with and without PAM (Debian's /etc/pam.d/sshd has pam_nologin), as
// OpenSSH's sshd does; offload sshd runs with privilege separation.
func TestNologinLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-nologin-1")
	rootKey := f.keygen("id_root", "ed25519")
	const msg = "offload test: no logins now"
	nologinNamespace(t, f, msg, rootKey)
	for _, usePAM := range []string{"no", "yes"} {
		lines := []string{"UsePAM " + usePAM, "PermitRootLogin prohibit-password"}
		oport, olog := openSSHD(t, f, lines...)
		d := startOffloadDaemon(t, f, nil, nil, lines...)
		for _, who := range []struct{ name, key string }{{u.Username, u.key}, {"root", rootKey}} {
			// sshd -e's child logs to the stderr the session inherits:
			// the client sees OpenSSH's log line only in that mode
			logLine := "User " + who.name + " not allowed because /etc/nologin exists"
			want := strings.Replace(outcome(t, f, oport, who.name, who.key), logLine+"\r\n", "", 1)
			got := outcome(t, f, d.port, who.name, who.key)
			if usePAM == "no" && who.name != "root" && !d.stderr.Await(t, logLine) {
				t.Errorf("offload sshd did not log %q:\n%s", logLine, d.stderr)
			}
			t.Logf("UsePAM %s, %s: OpenSSH %q, offload %q", usePAM, who.name, want, got)
			if got != want {
				t.Errorf("UsePAM %s, %s: offload %q, OpenSSH %q\nOpenSSH:\n%s\noffload:\n%s", usePAM, who.name, got, want, olog, d.stderr)
			}
			if who.name != "root" && strings.Contains(want, msg) != strings.Contains(got, msg) {
				t.Errorf("UsePAM %s: the refused client sees %q, under OpenSSH %q", usePAM, got, want)
			}
		}
	}
}
