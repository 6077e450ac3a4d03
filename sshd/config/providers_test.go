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

// TestProviderURIChecked: a misspelt pkcs11: URI in ProviderMap or
// ProviderDeny (it would select or deny no token) fails when the file is
// read, as sshd -t shows; a well-formed one is kept.
func TestProviderURIChecked(t *testing.T) {
	for _, bad := range []string{
		"ProviderMap aes128-gcm=pkcs11:token=web;serail=1\n", "ProviderDeny pkcs11:token=web?unknown=1\n",
		"ProviderDeny aes128-gcm=pkcs11:tokn=web\n",
	} {
		if err := parseErr(bad); err == nil || !strings.Contains(err.Error(), "bad URI") {
			t.Errorf("%q: %v, want the URI refused", bad, err)
		}
	}
	c := parse(t, "ProviderMap aes128-gcm=pkcs11:token=web\nProviderDeny pkcs11:token=old\n")
	if c.ProviderMap["aes128-gcm"] != "pkcs11:token=web" || len(c.ProviderDeny) != 1 {
		t.Errorf("ProviderMap %v, ProviderDeny %v", c.ProviderMap, c.ProviderDeny)
	}
}
