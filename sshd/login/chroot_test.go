package login

import (
	"os/user"
	"testing"
)

// TestExpandChroot: %h, %u, %U and %% expand as OpenSSH's; another token
// is an error.
func TestExpandChroot(t *testing.T) {
	u, err := user.Current()
	if err != nil {
		t.Skip(err)
	}
	got, err := expandChroot("/c/%u/%U/%h/100%%", u.Username)
	if want := "/c/" + u.Username + "/" + u.Uid + "/" + u.HomeDir + "/100%"; err != nil || got != want {
		t.Errorf("expanded %q (%v), want %q", got, err, want)
	}
	if _, err := expandChroot("/c/%x", u.Username); err == nil {
		t.Error("an unknown token expanded without an error")
	}
}
