package auth

import (
	"crypto/rand"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// makeAnyUserCert issues a user certificate for key that names no
// principal (ssh-keygen -s without -n), modified by mod before signing and
// by tamper after. x/crypto's SignCert refuses to make one.
func makeAnyUserCert(t *testing.T, ca, key ssh.Signer, mod, tamper func(*ssh.Certificate)) ssh.Signer {
	t.Helper()
	now := time.Now()
	c := &ssh.Certificate{
		Key: key.PublicKey(), CertType: ssh.UserCert, KeyId: "any", Serial: 9, Nonce: make([]byte, 32),
		ValidAfter: uint64(now.Add(-time.Hour).Unix()), ValidBefore: uint64(now.Add(time.Hour).Unix()),
		SignatureKey: ca.PublicKey(),
	}
	if mod != nil {
		mod(c)
	}
	sig, err := ca.Sign(rand.Reader, certSignedBytes(c))
	if err != nil {
		t.Fatal(err)
	}
	c.Signature = sig
	if tamper != nil {
		tamper(c)
	}
	s, err := ssh.NewCertSigner(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCertWithoutPrincipals: as OpenSSH's sshd (regress cert-userkey,
// "empty principals"), a certificate naming no principal logs in under a
// cert-authority line without principals=, and nowhere else; its other
// checks still apply.
func TestCertWithoutPrincipals(t *testing.T) {
	ca := newEd25519(t)
	expired := func(c *ssh.Certificate) { c.ValidBefore = uint64(time.Now().Add(-time.Minute).Unix()) }
	for _, tc := range []struct {
		name        string
		line        string // "" means TrustedUserCAKeys
		mod, tamper func(*ssh.Certificate)
		ok          bool
	}{
		{"cert-authority", "cert-authority", nil, nil, true},
		{"cert-authority with from=", `cert-authority,from="192.0.2.0/24"`, nil, nil, true},
		{"principals=", `cert-authority,principals="alice"`, nil, nil, false},
		{"TrustedUserCAKeys", "", nil, nil, false},
		{"expired", "cert-authority", expired, nil, false},
		{"unknown critical option", "cert-authority", func(c *ssh.Certificate) { c.CriticalOptions = map[string]string{"frob": ""} }, nil, false},
		{"tampered", "cert-authority", nil, func(c *ssh.Certificate) { c.KeyId = "other" }, false},
		{"other CA", "cert-authority", func(c *ssh.Certificate) { c.SignatureKey = newEd25519(t).PublicKey() }, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.line == "" {
				w.trustCA(ca)
			} else {
				w.authorize(authLine(tc.line, ca.PublicKey()))
			}
			signer := makeAnyUserCert(t, ca, newEd25519(t), tc.mod, tc.tamper)
			if p := certLogin(t, w, signer); (p != nil) != tc.ok {
				t.Fatalf("login %v, want %v\n%s", p != nil, tc.ok, w.logs)
			}
		})
	}
}

// TestCertSignedBytes: what certSignedBytes returns is what x/crypto
// verifies, so a certificate SignCert made checks out by either path.
func TestCertSignedBytes(t *testing.T) {
	ca, key := newEd25519(t), newEd25519(t)
	_, c := makeCert(t, ca, key, nil)
	if err := ca.PublicKey().Verify(certSignedBytes(c), c.Signature); err != nil {
		t.Fatalf("SignCert's signature does not verify over certSignedBytes: %v", err)
	}
}
