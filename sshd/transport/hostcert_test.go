package transport

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestHostCertificates: a certificate pairs with the key it certifies,
// also a key held elsewhere (HostPublicKeys: a token, a monitor), and
// signs with that key's plain algorithm; a user certificate or one of an
// unknown key is refused at NewServer.
func TestHostCertificates(t *testing.T) {
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca, _ := ssh.NewSignerFromSigner(caKey)
	tokenPub, _, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(tokenPub)
	cert := func(k ssh.PublicKey, typ uint32) *ssh.Certificate {
		c := &ssh.Certificate{Key: k, CertType: typ, ValidPrincipals: []string{"host"}, ValidBefore: ssh.CertTimeInfinity}
		if err := c.SignCert(rand.Reader, ca); err != nil {
			t.Fatal(err)
		}
		return c
	}
	reg := testRegistry(t)
	srv, err := NewServer(&Config{Registry: reg, HostPublicKeys: []ssh.PublicKey{pub},
		HostCertificates: []*ssh.Certificate{cert(pub, ssh.HostCert)}})
	if err != nil {
		t.Fatal(err)
	}
	hk := hostKeyFor(srv.hostKeys, "ssh-ed25519-cert-v01@openssh.com")
	if hk == nil || hk.signAlg != "ssh-ed25519" || !bytes.Equal(hk.signPub, pub.Marshal()) || bytes.Equal(hk.pub, pub.Marshal()) {
		t.Fatalf("certificate pairing %+v", hk)
	}
	_, hosts, ciphers, _ := srv.Offer()
	if hosts[0] != "ssh-ed25519-cert-v01@openssh.com" || len(ciphers) == 0 {
		t.Errorf("offer %v", hosts)
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	otherPub, _ := ssh.NewPublicKey(other)
	for name, c := range map[string]*ssh.Certificate{"user certificate": cert(pub, ssh.UserCert), "unknown key": cert(otherPub, ssh.HostCert)} {
		if _, err := NewServer(&Config{Registry: reg, HostPublicKeys: []ssh.PublicKey{pub}, HostCertificates: []*ssh.Certificate{c}}); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
