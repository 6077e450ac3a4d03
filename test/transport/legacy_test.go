package transport_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/config"
	"github.com/offload/offload/sshd/transport"
)

// legacyLists enables the legacy ciphers and MACs as an sshd_config does,
// through the configuration's own list parser: "Ciphers +...", "MACs +...".
func legacyLists(t *testing.T) (ciphers, macs []string) {
	t.Helper()
	ciphers, _, err := config.ParseAlgList(config.CipherList, "+aes128-cbc,aes192-cbc,aes256-cbc,3des-cbc")
	if err != nil {
		t.Fatal(err)
	}
	macs, _, err = config.ParseAlgList(config.MACList, "+hmac-sha1*,hmac-md5*")
	if err != nil {
		t.Fatal(err)
	}
	return ciphers, macs
}

// roundTrip puts a 300 KB file with sftp and gets it back: many packets
// each way under opts.
func (f *fixture) roundTrip(t *testing.T, opts []string) {
	t.Helper()
	data := make([]byte, 300<<10)
	rand.Read(data)
	dir := t.TempDir()
	src, mid, back := filepath.Join(dir, "src"), filepath.Join(dir, "mid"), filepath.Join(dir, "back")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f.sftp(t, opts, "put "+src+" "+mid+"\nget "+mid+" "+back+"\n")
	got, err := os.ReadFile(back)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%v: the file came back different (%v)", opts, err)
	}
}

// TestOpenSSHLegacyCiphersAndMACs: every legacy cipher and MAC OpenSSH
// 9.2 implements (CBC and 3DES; SHA-1, MD5 and UMAC MACs, plain, -96 and
// -etm; aes192-ctr), enabled with "+", carries a file each way with the
// OpenSSH client; CBC is tried with an encrypt-and-MAC and an EtM MAC.
func TestOpenSSHLegacyCiphersAndMACs(t *testing.T) {
	ciphers, macs := legacyLists(t)
	f := newFixture(t, &sshd.Config{Ciphers: ciphers, MACs: macs})
	client := clientSupports(t, f.ssh, "cipher")
	for _, c := range []string{"aes128-cbc", "aes192-cbc", "aes256-cbc", "3des-cbc", "aes192-ctr"} {
		if !slices.Contains(client, c) {
			t.Logf("the client lacks %s", c)
			continue
		}
		for _, mac := range []string{"hmac-sha1", "hmac-sha2-256-etm@openssh.com"} {
			t.Run(c+"/"+mac, func(t *testing.T) {
				f.roundTrip(t, []string{"Ciphers=" + c, "MACs=" + mac})
			})
		}
	}
	for _, mac := range intersect(transport.SupportedMACs(), clientSupports(t, f.ssh, "mac")) {
		if strings.HasPrefix(mac, "hmac-sha2-") {
			continue // TestOpenSSHMatrix
		}
		t.Run("aes128-ctr/"+mac, func(t *testing.T) {
			f.roundTrip(t, []string{"Ciphers=aes128-ctr", "MACs=" + mac})
		})
		if strings.HasPrefix(mac, "umac-") {
			t.Run("aes256-cbc/"+mac, func(t *testing.T) {
				f.roundTrip(t, []string{"Ciphers=aes256-cbc", "MACs=" + mac})
			})
		}
	}
}

// TestOpenSSHLegacyOffByDefault: a client that offers only a legacy
// cipher, MAC, key exchange or host key algorithm is refused by the default configuration, as OpenSSH's
// sshd refuses it.
func TestOpenSSHLegacyOffByDefault(t *testing.T) {
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{[]string{"Ciphers=aes128-cbc"}, "no common cipher"},
		{[]string{"Ciphers=3des-cbc"}, "no common cipher"},
		{[]string{"Ciphers=aes128-ctr", "MACs=hmac-sha1"}, "no common MAC"},
		{[]string{"Ciphers=aes128-ctr", "MACs=hmac-md5-etm@openssh.com"}, "no common MAC"},
		{[]string{"KexAlgorithms=diffie-hellman-group14-sha1"}, "no common key exchange"},
		{[]string{"KexAlgorithms=diffie-hellman-group1-sha1"}, "no common key exchange"},
		{[]string{"KexAlgorithms=diffie-hellman-group-exchange-sha1"}, "no common key exchange"},
		{[]string{"HostKeyAlgorithms=ssh-rsa"}, "no common host key"},
	} {
		opts, want := tc.opts, tc.want
		t.Run(strings.Join(opts, ","), func(t *testing.T) {
			// A fresh server (and log) for each case, on the default offer.
			f := newFixture(t, &sshd.Config{KexAlgorithms: transport.DefaultKex()})
			out, err := f.sftpErr(t, opts, "pwd\n")
			if err == nil || strings.Contains(out, "Remote working directory") {
				t.Fatalf("%v: connected: %s", opts, out)
			}
			if !f.logs.Await(t, want) {
				t.Fatalf("%v: the server did not log %q", opts, want)
			}
		})
	}
}

// TestOpenSSHLegacyKex: the SHA-1 key exchanges and ecdh-sha2-nistp521,
// enabled with "+", log the OpenSSH client in.
func TestOpenSSHLegacyKex(t *testing.T) {
	kex, _, err := config.ParseAlgList(config.KexList,
		"+diffie-hellman-group1-sha1,diffie-hellman-group14-sha1,diffie-hellman-group-exchange-sha1,ecdh-sha2-nistp521")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, &sshd.Config{KexAlgorithms: kex})
	for _, k := range []string{"diffie-hellman-group1-sha1", "diffie-hellman-group14-sha1",
		"diffie-hellman-group-exchange-sha1", "ecdh-sha2-nistp521"} {
		t.Run(k, func(t *testing.T) {
			f.checkSFTP(t, []string{"KexAlgorithms=" + k})
			if !f.logs.Await(t, "kex="+k) {
				t.Errorf("the server did not log kex=%s", k)
			}
		})
	}
}

// TestOpenSSHLegacyHostKeys: "HostKeyAlgorithms +ssh-rsa" lets a client
// that asks only for SHA-1 RSA signatures verify the host key, and a
// P-521 host key (on by default, as in OpenSSH) serves
// ecdsa-sha2-nistp521.
func TestOpenSSHLegacyHostKeys(t *testing.T) {
	algs, _, err := config.ParseAlgList(config.HostKeyAlgList, "+ssh-rsa")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, &sshd.Config{HostKeyAlgorithms: algs})
	for _, alg := range []string{"ssh-rsa", "ecdsa-sha2-nistp521"} {
		t.Run(alg, func(t *testing.T) {
			f.checkSFTP(t, []string{"HostKeyAlgorithms=" + alg})
		})
	}
}

// TestOpenSSHLegacyUserKeys: a P-521 user key logs in on the defaults,
// and an RSA key signing with SHA-1 (ssh-rsa) only after
// "PubkeyAcceptedAlgorithms +ssh-rsa", as with OpenSSH.
func TestOpenSSHLegacyUserKeys(t *testing.T) {
	dir := t.TempDir()
	keygen := testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	var ak []byte
	for _, k := range []struct{ name, typ, bits string }{{"p521", "ecdsa", "521"}, {"rsa", "rsa", "2048"}} {
		path := filepath.Join(dir, k.name)
		testenv.Run(t, keygen, "-q", "-t", k.typ, "-b", k.bits, "-N", "", "-f", path)
		pub, err := os.ReadFile(path + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		ak = append(ak, pub...)
	}
	for _, tc := range []struct {
		name, accepted, key, clientAlg string
		ok                             bool
	}{
		{"p521-default", "", "p521", "ecdsa-sha2-nistp521", true},
		{"ssh-rsa-default", "", "rsa", "ssh-rsa", false},
		{"ssh-rsa-enabled", "+ssh-rsa", "rsa", "ssh-rsa", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &sshd.Config{Auth: &auth.Config{}}
			if tc.accepted != "" {
				algs, _, err := config.ParseAlgList(config.PubkeyList, tc.accepted)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Auth.PublicKeyAlgorithms = algs
			}
			f := newFixture(t, cfg)
			if err := os.WriteFile(cfg.Auth.AuthorizedKeysFiles[0], ak, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := f.sftpErr(t, []string{"IdentityFile=" + filepath.Join(dir, tc.key),
				"PubkeyAcceptedAlgorithms=" + tc.clientAlg}, "pwd\n")
			if got := err == nil && strings.Contains(out, "Remote working directory"); got != tc.ok {
				t.Fatalf("logged in: %v, want %v (%v): %s", got, tc.ok, err, out)
			}
		})
	}
}
