package auth_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// A certificate login is logged as OpenSSH logs it, with the key's
// fingerprint, the certificate's Key ID and serial and the CA's
// fingerprint ("Accepted publickey for U from A port P ssh2:
// ED25519-CERT SHA256:… ID … (serial N) CA RSA SHA256:…"): the same line
// from OpenSSH's sshd and the real offload sshd, up to the port.
func TestCertificateAcceptedLineLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-cert-1") // a password: not locked
	ca := f.keygen("cert_ca", "rsa", "-b", "2048")
	f.certify(ca, u.key, "-n", u.Username, "-z", "4711", "-I", "key id with spaces")
	lines := []string{"TrustedUserCAKeys " + ca + ".pub", "AuthorizedKeysFile none", "LogLevel INFO"}
	oport, olog := openSSHD(t, f, lines...)
	d := startOffloadDaemon(t, f, nil, []string{"JOURNAL_STREAM=8:1"}, append(lines, "PrivilegeSeparation yes")...) // OpenSSH's bare lines
	accepted := regexp.MustCompile(`Accepted publickey for .* port \d+ ssh2: .*`)
	port := regexp.MustCompile(` port \d+ `)
	var got []string
	for _, s := range []struct {
		port string
		log  interface{ String() string }
	}{{oport, olog}, {d.port, d.stderr}} {
		if r := outcome(t, f, s.port, u.Username, u.key); r != "ok" {
			t.Fatalf("certificate login: %s\n%s", r, s.log)
		}
		line := awaitLog(t, s.log, accepted)
		got = append(got, port.ReplaceAllString(strings.TrimSpace(line), " port P "))
	}
	t.Logf("OpenSSH: %s", got[0])
	if got[0] == "" || got[1] != got[0] || !strings.Contains(got[0], "(serial 4711)") {
		t.Errorf("offload logged\n%s\nOpenSSH\n%s", got[1], got[0])
	}
}
