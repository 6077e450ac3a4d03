package login_test

import (
	"crypto/ed25519"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/test/bench/internal/login"
)

// A benchmark login's client settings: one key exchange, one host-key
// algorithm and one cipher, the same as the servers are configured with.
func ExampleConfig() {
	_, priv, _ := ed25519.GenerateKey(nil)
	signer, _ := ssh.NewSignerFromKey(priv)
	cfg := login.Config("alice", signer, ssh.InsecureIgnoreHostKey())
	fmt.Println(cfg.User, cfg.KeyExchanges, cfg.HostKeyAlgorithms, cfg.Ciphers)
	// Output: alice [curve25519-sha256] [ssh-ed25519] [aes128-gcm@openssh.com]
}
