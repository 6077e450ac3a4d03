package config

import (
	"slices"
	"strings"
	"testing"
)

func TestPKCS11EnvironmentAndStateDir(t *testing.T) {
	c := parse(t, "PKCS11Environment SOFTHSM2_CONF=/a/softhsm2.conf\nPKCS11Environment SOFTHSM2_CONF=/b\nPKCS11Environment X=1\nPKCS11StateDir /var/lib/x\n")
	if want := []string{"SOFTHSM2_CONF=/a/softhsm2.conf", "X=1"}; !slices.Equal(c.PKCS11Env, want) {
		t.Errorf("PKCS11Env = %q, want %q (the first value of a name wins)", c.PKCS11Env, want)
	}
	out := printed(c)
	for _, want := range []string{"pkcs11environment SOFTHSM2_CONF=/a/softhsm2.conf", "pkcs11statedir /var/lib/x"} {
		if !strings.Contains(strings.ToLower(out), strings.ToLower(want)) {
			t.Errorf("-T lacks %q", want)
		}
	}
	if c := parse(t, "PKCS11StateDir none\n"); c.PKCS11StateDir != "none" {
		t.Errorf("none: %q", c.PKCS11StateDir)
	}
	if c := parse(t, ""); c.PKCS11StateDir != "" || !strings.Contains(strings.ToLower(printed(c)), "pkcs11statedir default") {
		t.Errorf("default: %q", c.PKCS11StateDir)
	}
	for _, bad := range []string{"PKCS11Environment novalue\n", "PKCS11Environment =x\n", "PKCS11StateDir \"\"\n"} {
		if err := parseErr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
