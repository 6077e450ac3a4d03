package account

import (
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// A password set with chpasswd (yescrypt on Debian 12) verifies from the
// real /etc/shadow.
func TestSystemShadow(t *testing.T) {
	if !cryptAvailable {
		t.Skip("no libcrypt in this build")
	}
	u := testenv.NewUser(t)
	testenv.SetPassword(t, u.Username, "correct horse")
	a, err := Files{}.Lookup(u.Username)
	if err != nil || a.Shadow == nil {
		t.Fatalf("Lookup: %+v, %v", a, err)
	}
	if !strings.HasPrefix(a.Hash(), "$y$") {
		t.Logf("system hash method %.3s (Debian 12's default is yescrypt $y$)", a.Hash())
	}
	for pw, want := range map[string]bool{"correct horse": true, "correct horsE": false} {
		if ok, err := VerifyPassword(a, pw, false); ok != want || err != nil {
			t.Errorf("VerifyPassword: %v, %v; want %v", ok, err, want)
		}
	}
	groups, err := SystemGroups(a)
	if err != nil || len(groups) == 0 || groups[0] != u.Username {
		t.Errorf("SystemGroups = %q, %v", groups, err)
	}
}
