package transport_test

import (
	"crypto"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd"
)

// BenchmarkLogin is one complete login (curve25519 key exchange, host-key
// signature, publickey authentication) of an in-process x/crypto/ssh
// client, with the host key in memory ("file") and in a SoftHSM token.
// The target: token at most 1 ms slower than file.
func BenchmarkLogin(b *testing.B) {
	fileKeys := allHostKeys()
	for _, hk := range []struct {
		alg  string
		file crypto.Signer
	}{{"ssh-ed25519", fileKeys[0]}, {"ecdsa-sha2-nistp256", fileKeys[1]}} {
		b.Run("file/"+hk.alg, func(b *testing.B) { benchLogin(b, nil, hk.file, hk.alg) })
		b.Run("token/"+hk.alg, func(b *testing.B) {
			reg, keys := tokenHostKeysB(b)
			benchLogin(b, reg, keys[hk.alg], hk.alg)
		})
	}
}

func benchLogin(b *testing.B, reg *provider.Registry, key crypto.Signer, alg string) {
	_, pubLine := clientKey(b)
	ak := b.TempDir() + "/authorized_keys"
	if err := os.WriteFile(ak, pubLine, 0o600); err != nil {
		b.Fatal(err)
	}
	srv, err := sshd.NewServer(&sshd.Config{Registry: reg, HostKeys: []crypto.Signer{key}, Auth: authFor(ak)})
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go srv.Serve(l)
	signer, _ := clientKey(b)
	cfg := &ssh.ClientConfig{User: currentUser(b), Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), HostKeyAlgorithms: []string{alg},
		Timeout: 10 * time.Second}
	cfg.KeyExchanges = []string{"curve25519-sha256"}
	for b.Loop() {
		cl, err := ssh.Dial("tcp", l.Addr().String(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		cl.Close()
	}
}
