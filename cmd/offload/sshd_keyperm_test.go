package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// TestHostKeyPermissionsLikeOpenSSH gives OpenSSH 9.2's sshd and offload
// sshd the same configuration with a host key of each mode: both refuse
// the key when group or others may access it ("UNPROTECTED PRIVATE KEY
// FILE") and -t fails, its only key gone; both use it at 0600 and 0400,
// and when another user owns it (OpenSSH checks only its own files).
func TestHostKeyPermissionsLikeOpenSSH(t *testing.T) {
	sshdBin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	testenv.Root(t) // chown, and sshd -t
	os.MkdirAll("/run/sshd", 0o755)
	cases := []struct {
		mode  os.FileMode
		owner int // -1: the test's user
		ok    bool
	}{
		{0o600, -1, true}, {0o400, -1, true}, {0o644, -1, false}, {0o640, -1, false}, {0o604, -1, false},
		{0o644, 65534, true},
	}
	for _, c := range cases {
		dir := t.TempDir()
		key := writeHostKey(t, dir)
		if err := os.Chmod(key, c.mode); err != nil {
			t.Fatal(err)
		}
		if c.owner >= 0 {
			if err := os.Chown(key, c.owner, c.owner); err != nil {
				t.Fatal(err)
			}
		}
		cfg := writeFileT(t, dir, "sshd_config", "HostKey "+key+"\nPort 2222\nListenAddress 127.0.0.1\nPidFile none\n")
		out, err := exec.Command(sshdBin, "-t", "-f", cfg).CombinedOutput()
		if (err == nil) != c.ok {
			t.Errorf("mode %04o owner %d: OpenSSH -t: %v (the test's premise)\n%s", c.mode, c.owner, err, out)
		}
		_, stderr, err := runSshd("-t", "-f", cfg, "-o", "CalibrationCache=none")
		if (err == nil) != c.ok {
			t.Errorf("mode %04o owner %d: offload -t: %v, OpenSSH: %s", c.mode, c.owner, err, out)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error()+stderr, "UNPROTECTED PRIVATE KEY FILE") ||
			!strings.Contains(err.Error()+stderr, key)) {
			t.Errorf("mode %04o: offload's error %v does not say the key file is unprotected (%s)", c.mode, err, stderr)
		}
	}
}
