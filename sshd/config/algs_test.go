package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/offload/offload/sshd/transport"
)

// TestAlgTablesFromTransport: the configuration's lists are the
// transport's table, not a copy of it.
func TestAlgTablesFromTransport(t *testing.T) {
	for list, kind := range map[AlgList]transport.AlgorithmKind{CipherList: transport.KindCipher, MACList: transport.KindMAC,
		KexList: transport.KindKex, HostKeyAlgList: transport.KindHostKey} {
		var names, defs []string
		for _, a := range transport.Algorithms() {
			if a.Kind == kind {
				names = append(names, a.Name)
				if a.Default {
					defs = append(defs, a.Name)
				}
			}
		}
		if !slices.Equal(SupportedAlgorithms(list), names) || !slices.Equal(DefaultAlgorithms(list), defs) {
			t.Errorf("%s: %v / %v, transport %v / %v", kind, SupportedAlgorithms(list), DefaultAlgorithms(list), names, defs)
		}
		for _, n := range names {
			if !slices.Contains(algTables[list].openssh, n) {
				t.Errorf("%s %s: offload implements a name OpenSSH does not know", kind, n)
			}
		}
	}
}

func TestAlgListForms(t *testing.T) {
	defKex := DefaultAlgorithms(KexList)
	without := func(list []string, drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(list), func(n string) bool { return slices.Contains(drop, n) })
	}
	cases := []struct {
		list  AlgList
		arg   string
		want  []string
		warns int
	}{
		{KexList, "-curve25519-sha256*", without(defKex, "curve25519-sha256", "curve25519-sha256@libssh.org"), 0},
		{KexList, "+ecdh-sha2-nistp256", append(slices.Clone(defKex), "ecdh-sha2-nistp256"), 0},
		{KexList, "^curve25519-sha256", append([]string{"curve25519-sha256"}, without(defKex, "curve25519-sha256")...), 0},
		{KexList, "ecdh-sha2-nistp*", []string{"ecdh-sha2-nistp256", "ecdh-sha2-nistp384", "ecdh-sha2-nistp521"}, 0},
		{KexList, "curve25519-sha256,gss-curve25519-sha256-", []string{"curve25519-sha256"}, 1},
		{CipherList, "aes*-gcm@openssh.com", []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com"}, 0},
		{CipherList, "aes256-gcm@openssh.com,aes192-ctr", []string{"aes256-gcm@openssh.com", "aes192-ctr"}, 0},
		{CipherList, "-3des-cbc,aes128-cbc,rot13", DefaultAlgorithms(CipherList), 1},
		{KexList, "-gss-group14-sha1-", defKex, 1},
		{MACList, "+umac-128-etm@openssh.com", DefaultAlgorithms(MACList), 0},
		// Legacy algorithms: off by default, enabled as OpenSSH enables them.
		{CipherList, "+aes128-cbc,3des-cbc", append(DefaultAlgorithms(CipherList), "aes128-cbc", "3des-cbc"), 0},
		{CipherList, "^aes*-cbc", append([]string{"aes128-cbc", "aes192-cbc", "aes256-cbc"}, DefaultAlgorithms(CipherList)...), 0},
		{MACList, "+hmac-sha1", append(DefaultAlgorithms(MACList), "hmac-sha1"), 0},
		{MACList, "hmac-md5*", []string{"hmac-md5-etm@openssh.com", "hmac-md5", "hmac-md5-96-etm@openssh.com", "hmac-md5-96"}, 0},
		{MACList, "-umac*", without(DefaultAlgorithms(MACList), "umac-64-etm@openssh.com", "umac-128-etm@openssh.com",
			"umac-64@openssh.com", "umac-128@openssh.com"), 0},
		{HostKeyAlgList, "+sk-ssh-ed25519@openssh.com", DefaultAlgorithms(HostKeyAlgList), 1},
		{PubkeyList, "+ssh-rsa", append(DefaultAlgorithms(PubkeyList), "ssh-rsa"), 0},
	}
	for _, tc := range cases {
		got, warns, err := ParseAlgList(tc.list, tc.arg)
		if err != nil || !slices.Equal(got, tc.want) || len(warns) != tc.warns {
			t.Errorf("%q: %v %q %v, want %v with %d warnings", tc.arg, got, warns, err, tc.want, tc.warns)
		}
	}
}

// TestAlgListRefusals: a name OpenSSH knows that offload does not
// implement is an error with the reason, never a warning; names OpenSSH
// 9.2 does not know are unknown.
func TestAlgListRefusals(t *testing.T) {
	for _, tc := range []struct {
		list      AlgList
		arg, want string
	}{
		{HostKeyAlgList, "+ssh-dss", "DSA keys and signatures are not supported"},
		{HostKeyAlgList, "ssh-ed25519,ssh-dss-cert-v01@openssh.com", "OpenSSH 10 removed them"},
		{PubkeyList, "+ssh-dss", "DSA"},
		{CASigList, "ssh-dss", "DSA"},
		{PubkeyList, "+webauthn-sk-ecdsa-sha2-nistp256@openssh.com", "WebAuthn"},
		{CipherList, "+blowfish-cbc", "unknown Ciphers algorithm"},
		{CipherList, "+rijndael-cbc@lysator.liu.se", "unknown Ciphers algorithm"},
		{MACList, "+hmac-ripemd160", "unknown MACs algorithm"},
	} {
		names, warns, err := ParseAlgList(tc.list, tc.arg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: %v %v %v, want an error saying %q", algTables[tc.list].keyword, tc.arg, names, warns, err, tc.want)
		}
	}
}

// The lines of the ssh-audit.com hardening guides (Debian 12, Ubuntu
// 24.04) and of CIS-style removal lists: they start, with a warning for
// each name offload does not implement, as long as something usable is
// left.
const hardening = `
KexAlgorithms sntrup761x25519-sha512@openssh.com,gss-curve25519-sha256-,curve25519-sha256,curve25519-sha256@libssh.org,gss-group16-sha512-,diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,diffie-hellman-group-exchange-sha256
Ciphers aes256-gcm@openssh.com,aes256-ctr,aes192-ctr,aes128-gcm@openssh.com,aes128-ctr
MACs hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,umac-128-etm@openssh.com
HostKeyAlgorithms sk-ssh-ed25519-cert-v01@openssh.com,ssh-ed25519-cert-v01@openssh.com,rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-256-cert-v01@openssh.com,sk-ssh-ed25519@openssh.com,ssh-ed25519,rsa-sha2-512,rsa-sha2-256
CASignatureAlgorithms sk-ssh-ed25519@openssh.com,ssh-ed25519,rsa-sha2-512,rsa-sha2-256
GSSAPIKexAlgorithms gss-curve25519-sha256-,gss-group16-sha512-
HostbasedAcceptedAlgorithms sk-ssh-ed25519-cert-v01@openssh.com,ssh-ed25519-cert-v01@openssh.com,sk-ssh-ed25519@openssh.com,ssh-ed25519,rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-512,rsa-sha2-256-cert-v01@openssh.com,rsa-sha2-256
PubkeyAcceptedAlgorithms sk-ssh-ed25519-cert-v01@openssh.com,ssh-ed25519-cert-v01@openssh.com,sk-ssh-ed25519@openssh.com,ssh-ed25519,rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-512,rsa-sha2-256-cert-v01@openssh.com,rsa-sha2-256
`

const cisRemovals = `
Ciphers -3des-cbc,aes128-cbc,aes192-cbc,aes256-cbc,chacha20-poly1305@openssh.com
KexAlgorithms -diffie-hellman-group1-sha1,diffie-hellman-group14-sha1,diffie-hellman-group-exchange-sha1,diffie-hellman-group14-sha256
MACs -hmac-md5,hmac-md5-96,hmac-ripemd160,hmac-sha1-96,umac-64@openssh.com,hmac-md5-etm@openssh.com,hmac-md5-96-etm@openssh.com,hmac-ripemd160-etm@openssh.com,hmac-sha1-96-etm@openssh.com,umac-64-etm@openssh.com,umac-128-etm@openssh.com
`

func TestHardeningLists(t *testing.T) {
	c := parse(t, hardening)
	var ws []string
	for _, w := range c.Warnings() {
		ws = append(ws, w.String())
	}
	all := strings.Join(ws, "\n")
	// Each list keeps what offload implements, in the file's order, and
	// warns about the rest.
	for _, tc := range []struct {
		list AlgList
		got  []string
	}{{KexList, c.KexAlgorithms}, {CipherList, c.Ciphers}, {MACList, c.MACs}, {HostKeyAlgList, c.HostKeyAlgorithms},
		{CASigList, c.CASignatureAlgorithms}, {PubkeyList, c.PubkeyAcceptedAlgorithms}} {
		kw := algTables[tc.list].keyword
		var want []string
		for _, n := range strings.Split(lineArg(hardening, kw), ",") {
			if slices.Contains(SupportedAlgorithms(tc.list), n) {
				want = append(want, n)
			} else if !strings.Contains(all, kw+": "+n+" is not implemented by offload") {
				t.Errorf("no warning about %s %s:\n%s", kw, n, all)
			}
		}
		if !slices.Equal(tc.got, want) || len(want) == 0 {
			t.Errorf("%s = %v, want %v", kw, tc.got, want)
		}
	}
	if !strings.Contains(all, "Unsupported option GSSAPIKexAlgorithms") {
		t.Errorf("GSSAPIKexAlgorithms not warned about:\n%s", all)
	}
	c = parse(t, cisRemovals)
	if slices.Contains(c.Ciphers, "chacha20-poly1305@openssh.com") || len(c.Ciphers) == 0 {
		t.Errorf("Ciphers %v", c.Ciphers)
	}
	if len(c.Warnings()) == 0 {
		t.Error("no warnings for names nobody implements in removal lists")
	}
}

// lineArg is the argument of keyword's line in text.
func lineArg(text, keyword string) string {
	for _, l := range strings.Split(text, "\n") {
		if k, a, ok := strings.Cut(l, " "); ok && k == keyword {
			return a
		}
	}
	return ""
}

// FuzzAlgList: any list argument gives names offload implements, or an
// error; never a panic or an empty list.
func FuzzAlgList(f *testing.F) {
	for _, s := range []string{"+aes128-ctr", "-*", "^ecdh-*", "aes*", "a,,b", "!x", "-diffie-hellman-group14-sha256", "ssh-ed25519-cert-v01@openssh.com"} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, arg string, which uint8) {
		list := AlgList(int(which) % len(algTables))
		names, _, err := ParseAlgList(list, arg)
		if err != nil {
			return
		}
		if len(names) == 0 {
			t.Fatalf("%q: empty list without an error", arg)
		}
		for _, n := range names {
			if !slices.Contains(algTables[list].supported, n) {
				t.Fatalf("%q: %s is not implemented", arg, n)
			}
		}
	})
}

// TestLegacyAlgsInMatch: PubkeyAcceptedAlgorithms +ssh-rsa works in a
// Match block, as OpenSSH allows; the transport lists (Ciphers, MACs,
// KexAlgorithms, HostKeyAlgorithms) are refused there, as by OpenSSH,
// since they are negotiated before the user is known.
func TestLegacyAlgsInMatch(t *testing.T) {
	c := parse(t, "Match User old\n\tPubkeyAcceptedAlgorithms +ssh-rsa\n")
	old, err := c.ForConnection(ConnInfo{User: "old", Addr: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.ForConnection(ConnInfo{User: "new", Addr: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(old.PubkeyAcceptedAlgorithms, "ssh-rsa") || slices.Contains(other.PubkeyAcceptedAlgorithms, "ssh-rsa") {
		t.Errorf("ssh-rsa: matched user %v, other %v", old.PubkeyAcceptedAlgorithms, other.PubkeyAcceptedAlgorithms)
	}
	for _, kw := range []string{"Ciphers +aes128-cbc", "MACs +hmac-sha1", "KexAlgorithms +diffie-hellman-group1-sha1", "HostKeyAlgorithms +ssh-rsa"} {
		if _, err := Parse("sshd_config", strings.NewReader("Match User old\n\t"+kw+"\n"), nil); err == nil {
			t.Errorf("%s accepted in a Match block", kw)
		}
	}
}
