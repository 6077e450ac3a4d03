package auth

import (
	"crypto/rand"
	"net"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/perm"
)

// makeCert issues a user certificate for key, valid now for alice with
// permit-pty, modified by mod before signing.
func makeCert(t *testing.T, ca, key ssh.Signer, mod func(*ssh.Certificate)) (ssh.Signer, *ssh.Certificate) {
	t.Helper()
	now := time.Now()
	c := &ssh.Certificate{
		Key: key.PublicKey(), CertType: ssh.UserCert, KeyId: "test", Serial: 7,
		ValidPrincipals: []string{"alice"},
		ValidAfter:      uint64(now.Add(-time.Hour).Unix()), ValidBefore: uint64(now.Add(time.Hour).Unix()),
		Permissions: ssh.Permissions{Extensions: map[string]string{"permit-pty": ""}},
	}
	if mod != nil {
		mod(c)
	}
	if err := c.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewCertSigner(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// trustCA writes the TrustedUserCAKeys file.
func (w *world) trustCA(cas ...ssh.Signer) {
	var text string
	for _, ca := range cas {
		text += authLine("", ca.PublicKey()) + "\n"
	}
	w.cfg.TrustedUserCAKeys = w.writeFile("trusted_cas", "# CAs\n"+text, 0o644)
}

// certLogin queries with the certificate and then signs with it.
func certLogin(t *testing.T, w *world, signer ssh.Signer) *perm.Permissions {
	t.Helper()
	c, ch := startRun(t, w.cfg)
	c.startService()
	cert := signer.PublicKey().(*ssh.Certificate)
	algo := cert.Type()
	if cert.Key.Type() == ssh.KeyAlgoRSA {
		algo = ssh.CertAlgoRSASHA256v01
	}
	if p := c.query(algo, cert); p[0] != 60 {
		wantFailure(t, p, "publickey")
		wantFailure(t, c.signed(algo, signer), "publickey") // and the signed request fails too
		return nil
	}
	wantPKOK(t, c.query(algo, cert), algo, cert)
	return wantSuccess(t, c.signed(algo, signer), ch)
}

func TestCertTrustedUserCAKeys(t *testing.T) {
	w := newWorld(t)
	ca, key := newEd25519(t), newEd25519(t)
	w.trustCA(newEd25519(t), ca)
	signer, _ := makeCert(t, ca, key, nil)
	p := certLogin(t, w, signer)
	if p == nil {
		t.Fatalf("certificate refused:\n%s", w.logs)
	}
	want := perm.Permissions{User: "alice", Method: "publickey", KeyFingerprint: ssh.FingerprintSHA256(key.PublicKey()),
		NoPortForwarding: true, NoAgentForwarding: true, NoX11Forwarding: true, NoUserRC: true}
	if !permsEqual(p, &want) {
		t.Fatalf("permissions %+v, want %+v", p, want)
	}
}

func TestCertRSAKeyAndCA(t *testing.T) {
	w := newWorld(t)
	ca := rsaSigner(t)
	w.trustCA(ca)
	signer, _ := makeCert(t, ca, rsaSigner(t), nil)
	if certLogin(t, w, signer) == nil {
		t.Fatalf("RSA certificate refused:\n%s", w.logs)
	}
	sha1CA, err := ssh.NewSignerWithAlgorithms(ca.(ssh.AlgorithmSigner), []string{ssh.KeyAlgoRSA})
	if err != nil {
		t.Fatal(err)
	}
	signer, _ = makeCert(t, sha1CA, newEd25519(t), nil)
	if certLogin(t, w, signer) != nil {
		t.Fatal("certificate signed with ssh-rsa (SHA-1) accepted")
	}
}

func permsEqual(a, b *perm.Permissions) bool {
	return a.User == b.User && a.Method == b.Method && a.KeyFingerprint == b.KeyFingerprint &&
		a.ForceCommand == b.ForceCommand && a.NoPTY == b.NoPTY && a.NoPortForwarding == b.NoPortForwarding &&
		a.NoAgentForwarding == b.NoAgentForwarding && a.NoX11Forwarding == b.NoX11Forwarding && a.NoUserRC == b.NoUserRC
}

func TestCertRejections(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		mod  func(*ssh.Certificate)
	}{
		{"expired", func(c *ssh.Certificate) { c.ValidBefore = uint64(now.Add(-time.Minute).Unix()) }},
		{"not yet valid", func(c *ssh.Certificate) { c.ValidAfter = uint64(now.Add(time.Minute).Unix()) }},
		{"other principal", func(c *ssh.Certificate) { c.ValidPrincipals = []string{"bob", "alice2"} }},
		{"host certificate", func(c *ssh.Certificate) { c.CertType = ssh.HostCert }},
		{"unknown critical option", func(c *ssh.Certificate) { c.CriticalOptions = map[string]string{"frobnicate": ""} }},
		{"source-address miss", func(c *ssh.Certificate) {
			c.CriticalOptions = map[string]string{"source-address": "198.51.100.0/24,10.0.0.1"}
		}},
		{"source-address malformed", func(c *ssh.Certificate) { c.CriticalOptions = map[string]string{"source-address": "192.0.2.*"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			ca := newEd25519(t)
			w.trustCA(ca)
			signer, _ := makeCert(t, ca, newEd25519(t), tc.mod)
			if certLogin(t, w, signer) != nil {
				t.Fatal("certificate accepted")
			}
		})
	}
}

func TestCertUntrustedOrTampered(t *testing.T) {
	w := newWorld(t)
	ca, key := newEd25519(t), newEd25519(t)
	signer, cert := makeCert(t, ca, key, nil)
	if certLogin(t, w, signer) != nil { // no TrustedUserCAKeys at all
		t.Fatal("certificate accepted without a trusted CA")
	}
	w.trustCA(newEd25519(t))
	if certLogin(t, w, signer) != nil {
		t.Fatal("certificate of an unknown CA accepted")
	}
	w.trustCA(ca)
	cert.ValidPrincipals = []string{"alice", "root"} // after signing
	tampered, err := ssh.NewCertSigner(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	if certLogin(t, w, tampered) != nil {
		t.Fatal("tampered certificate accepted")
	}
	// The CA key as a plain authorized key is not a cert-authority line.
	signer, _ = makeCert(t, ca, key, nil)
	if certLogin(t, w, signer) == nil {
		t.Fatal("fresh certificate refused")
	}
	w.cfg.TrustedUserCAKeys = ""
	w.authorize(authLine("", ca.PublicKey()))
	if certLogin(t, w, signer) != nil {
		t.Fatal("certificate accepted by a plain key line")
	}
}

func TestCertCriticalOptions(t *testing.T) {
	w := newWorld(t)
	ca := newEd25519(t)
	w.trustCA(ca)
	signer, _ := makeCert(t, ca, newEd25519(t), func(c *ssh.Certificate) {
		c.CriticalOptions = map[string]string{"force-command": "/usr/bin/backup", "source-address": "10.0.0.0/8,192.0.2.10"}
		c.Extensions = map[string]string{"permit-port-forwarding": "", "permit-agent-forwarding": "",
			"permit-X11-forwarding": "", "permit-user-rc": ""}
	})
	p := certLogin(t, w, signer)
	if p == nil {
		t.Fatalf("refused:\n%s", w.logs)
	}
	if p.ForceCommand != "/usr/bin/backup" || !p.NoPTY || p.NoPortForwarding || p.NoAgentForwarding || p.NoX11Forwarding || p.NoUserRC {
		t.Fatalf("permissions %+v", p)
	}
}

func TestCertAuthorityLine(t *testing.T) {
	ca := newEd25519(t)
	for _, tc := range []struct {
		name       string
		opts       string
		principals []string
		force      string
		ok         bool
	}{
		{"user principal", "cert-authority", []string{"alice"}, "", true},
		{"wrong principal", "cert-authority", []string{"ops"}, "", false},
		{"principals= match", `cert-authority,principals="dev,ops"`, []string{"x", "ops"}, "", true},
		{"principals= miss", `cert-authority,principals="dev,ops"`, []string{"alice"}, "", false},
		{"from= miss", `cert-authority,from="10.0.0.0/8"`, []string{"alice"}, "", false},
		{"commands agree", `cert-authority,command="a"`, []string{"alice"}, "a", true},
		{"commands differ", `cert-authority,command="a"`, []string{"alice"}, "b", false},
		{"restrict", `cert-authority,restrict`, []string{"alice"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.authorize(authLine(tc.opts, ca.PublicKey()))
			signer, _ := makeCert(t, ca, newEd25519(t), func(c *ssh.Certificate) {
				c.ValidPrincipals = tc.principals
				if tc.force != "" {
					c.CriticalOptions = map[string]string{"force-command": tc.force}
				}
			})
			p := certLogin(t, w, signer)
			if (p != nil) != tc.ok {
				t.Fatalf("login %v, want %v\n%s", p != nil, tc.ok, w.logs)
			}
			if tc.name == "restrict" && !p.NoPTY {
				t.Fatal("restrict on the CA line ignored")
			}
		})
	}
}

func TestAuthorizedPrincipalsFile(t *testing.T) {
	w := newWorld(t)
	ca := newEd25519(t)
	w.trustCA(ca)
	w.cfg.AuthorizedPrincipalsFile = "%h/.ssh/principals_%u"
	w.writeFile(".ssh/principals_alice", "# who\nops\n"+`from="10.0.0.0/8",command="x y" admins`+"\ndev\n", 0o600)
	for _, tc := range []struct {
		principals []string
		ok         bool
	}{{[]string{"ops"}, true}, {[]string{"admins"}, false}, {[]string{"alice"}, false}, {[]string{"dev"}, true}} {
		signer, _ := makeCert(t, ca, newEd25519(t), func(c *ssh.Certificate) { c.ValidPrincipals = tc.principals })
		if p := certLogin(t, w, signer); (p != nil) != tc.ok {
			t.Errorf("principals %v: login %v, want %v\n%s", tc.principals, p != nil, tc.ok, w.logs)
		}
	}
	name, opts, err := parsePrincipalsLine(`from="10.0.0.0/8",command="x y" admins`)
	if err != nil || name != "admins" || opts.command == nil || *opts.command != "x y" || len(opts.from) != 1 {
		t.Fatalf("parsePrincipalsLine: %q %+v %v", name, opts, err)
	}
}

func TestCertRootForcedCommandsOnly(t *testing.T) {
	w := newWorld(t)
	w.cfg.PermitRootLogin = RootForcedCommandsOnly
	ca := newEd25519(t)
	w.trustCA(ca)
	for _, force := range []string{"", "/bin/true"} {
		signer, _ := makeCert(t, ca, newEd25519(t), func(c *ssh.Certificate) {
			c.ValidPrincipals = []string{"root"}
			if force != "" {
				c.CriticalOptions = map[string]string{"force-command": force}
			}
		})
		c, ch := startRunFrom(t, w.cfg, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1})
		c.user = "root"
		c.startService()
		p := c.signed(signer.PublicKey().Type(), signer)
		if force == "" {
			wantFailure(t, p, "publickey")
		} else if got := wantSuccess(t, p, ch); got.ForceCommand != force {
			t.Fatalf("force-command %q", got.ForceCommand)
		}
	}
}

func TestRevokedKeys(t *testing.T) {
	w := newWorld(t)
	ca, certKey, plain, other := newEd25519(t), newEd25519(t), newEd25519(t), newEd25519(t)
	w.trustCA(ca)
	w.authorize(authLine("", plain.PublicKey()), authLine("", other.PublicKey()))
	signer, _ := makeCert(t, ca, certKey, nil)
	login := func(s ssh.Signer) bool {
		c, ch := startRun(t, w.cfg)
		c.startService()
		algo := s.PublicKey().Type()
		if p := c.signed(algo, s); p[0] != 52 {
			wantFailure(t, p, "publickey")
			return false
		}
		wantResult(t, ch)
		return true
	}
	revoke := func(keys ...ssh.Signer) {
		var text string
		for _, k := range keys {
			text += authLine("", k.PublicKey()) + "\n"
		}
		w.cfg.RevokedKeys = w.writeFile("revoked", "# revoked\n"+text, 0o644)
	}
	revoke(newEd25519(t))
	if !login(plain) || !login(signer) {
		t.Fatalf("unrelated revocation refused a login\n%s", w.logs)
	}
	revoke(plain)
	if login(plain) || !login(other) {
		t.Fatal("revoked plain key")
	}
	revoke(certKey)
	if login(signer) {
		t.Fatal("certificate of a revoked key accepted")
	}
	revoke(ca)
	if login(signer) {
		t.Fatal("certificate of a revoked CA accepted")
	}
	w.cfg.RevokedKeys = w.writeFile("krl", "SSHKRL\n\x00binary", 0o644)
	if login(other) || !w.logged("refusing all public keys") {
		t.Fatal("a malformed KRL did not refuse every key")
	}
	w.cfg.RevokedKeys = filepath.Join(w.home, "missing")
	if login(other) || !w.logged("refusing all public keys") {
		t.Fatal("missing RevokedKeys file did not refuse every key")
	}
	// Neither a KRL nor a key list (a KRL that lost its header, a
	// corrupted list): unusable, so every key is refused, as OpenSSH's
	// sshd refuses them; skipping the bad lines would let revoked keys in.
	for _, bad := range []string{"garbage-not-a-krl\n", authLine("", plain.PublicKey()) + "\nssh-ed25519 AAAA-truncated\n"} {
		w.cfg.RevokedKeys = w.writeFile("revoked", bad, 0o644)
		if login(other) {
			t.Fatalf("a malformed RevokedKeys list %q let a key in", bad)
		}
	}
}
