package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSweepStaleServices: a service stamped by a process that is gone is
// removed; one of a live process, and files without a stamp (the
// system's), stay.
func TestSweepStaleServices(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"oftgone":  "# " + ownerStamp(41) + "\nauth required pam_permit.so\n",
		"oftlive":  "# " + ownerStamp(42) + "\nauth required pam_permit.so\n",
		"sshd":     "# PAM configuration for the Secure Shell service\n@include common-auth\n",
		"oftbadid": "# " + stampPrefix + "x\n",
		"empty":    "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sweepStaleServices(dir, func(pid int) bool { return pid == 42 })
	for name := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := os.IsNotExist(err); gone != (name == "oftgone") {
			t.Errorf("%s: removed %v", name, gone)
		}
	}
}
