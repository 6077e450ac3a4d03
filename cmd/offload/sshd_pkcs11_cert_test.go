//go:build cgo && !nopkcs11

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/providers/pkcs11"
)

// TestSshdPKCS11HostCertificate: HostCertificate for a host key held in a
// SoftHSM token. The daemon offers ssh-ed25519-cert-v01@openssh.com, the
// token signs the exchange, and the OpenSSH client, trusting only the CA
// that ssh-keygen -h signed the certificate with, accepts the server.
func TestSshdPKCS11HostCertificate(t *testing.T) {
	keygen := testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	tok := softhsmtest.NewToken(t, "sshd-hostcert")
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := p.Generate(context.Background(), tok.URI("hostkey"), pkcs11.Ed25519)
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(signer.Public())
	p.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca")
	hostPub := writeFileT(t, dir, "host.pub", string(ssh.MarshalAuthorizedKey(pub)))
	for _, args := range [][]string{{"-q", "-t", "ed25519", "-N", "", "-f", ca}, {"-q", "-s", ca, "-h", "-I", "token host", "-n", "127.0.0.1", hostPub}} {
		if out, err := exec.Command(keygen, args...).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen %v: %v\n%s", args, err, out)
		}
	}
	cl := newOpenSSHClient(t)
	cfg := writeFileT(t, dir, "sshd_config", "ListenAddress 127.0.0.1:0\nCalibrationCache none\nPKCS11StateDir none\nStrictModes no\n"+
		"AuthorizedKeysFile "+cl.authorizedKeys+"\nHostKey "+tok.URI("hostkey")+"\nHostCertificate "+filepath.Join(dir, "host-cert.pub")+"\n")
	d, _, _ := startTestDaemon(t, cfg)
	addr := d.listeners[0].Addr().String()
	caPub, err := os.ReadFile(ca + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(addr, ":")
	kh := writeFileT(t, dir, "known_hosts", "@cert-authority [127.0.0.1]:"+port+" "+string(caPub))
	opts := []string{"-o", "UserKnownHostsFile=" + kh, "-o", "StrictHostKeyChecking=yes",
		"-o", "HostKeyAlgorithms=ssh-ed25519-cert-v01@openssh.com", "-o", "LogLevel=DEBUG1"}
	out, stderr, err := cl.run(t, addr, "", nil, opts, "echo", "offload-ok")
	if err != nil || out != "offload-ok\n" || !strings.Contains(stderr, "Server host certificate: ssh-ed25519-cert-v01@openssh.com") {
		t.Fatalf("login checking the token key's certificate: %q %v\n%s", out, err, stderr)
	}
}
