package auth_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/offload/offload/sshd/auth"
)

// RevokedKeys as an ssh-keygen KRL: a revoked key and a certificate with
// a revoked serial are refused, others log in; a corrupt KRL refuses all.
func TestOpenSSHRevokedKeysKRL(t *testing.T) {
	f := newFixture(t)
	good, bad := f.keygen("good", "ed25519"), f.keygen("bad", "ed25519")
	ca := f.keygen("ca", "ed25519")
	c1, c2 := f.keygen("c1", "ed25519"), f.keygen("c2", "ed25519")
	f.certify(ca, c1, "-n", f.user, "-z", "41")
	f.certify(ca, c2, "-n", f.user, "-z", "42")
	ak := f.write("authorized_keys", f.read("good.pub")+f.read("bad.pub")+"cert-authority "+f.read("ca.pub"))
	spec := f.write("spec", "serial: 42\n")
	krl := filepath.Join(f.dir, "revoked.krl")
	f.run(f.gen, "-k", "-f", krl, "-s", ca+".pub", spec)
	f.run(f.gen, "-k", "-u", "-f", krl, bad+".pub")

	s := f.serve(&auth.Config{AuthorizedKeysFiles: []string{ak}, RevokedKeys: krl})
	f.wantLogin(s, good, "ok")
	f.wantLogin(s, c1, "ok", "CertificateFile="+c1+"-cert.pub")
	f.wantDenied(s, bad, "Permission denied")
	f.wantDenied(s, c2, "Permission denied", "CertificateFile="+c2+"-cert.pub")
	if !awaitLine(t, s.logs, "revoked by file") {
		t.Errorf("no revocation in the log:\n%s", s.logs)
	}
	b, _ := os.ReadFile(krl)
	os.WriteFile(krl, b[:len(b)-3], 0o600) // truncated: fail closed
	f.wantDenied(s, good, "Permission denied")
}
