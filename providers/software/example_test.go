package software_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
)

// The software provider serves every catalog algorithm in pure Go; its
// AES does not use the CPU's instructions (the cpu provider's does).
func Example() {
	reg := provider.New(provider.Config{})
	defer reg.Close()
	reg.Register(software.New())

	aead, _ := reg.AEAD("chacha20-poly1305", make([]byte, 32))
	ct := aead.Seal(nil, make([]byte, 12), []byte("hello"), nil)
	ka, _ := reg.KeyAgreement("x25519")
	peer, _ := reg.KeyAgreement("x25519")
	a, _ := ka.SharedSecret(peer.PublicKey())
	b, _ := peer.SharedSecret(ka.PublicKey())
	fmt.Println(len(ct), string(a) == string(b))
	// Output: 21 true
}

// Signer opens OpenSSH, PKCS #8, PKCS #1 and SEC 1 key files; with a path,
// GenerateSigner writes a new OpenSSH key file (mode 0600).
func ExampleProvider_Signer() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ssh_host_ed25519_key")
	p := software.New()
	if _, err := p.GenerateSigner(context.Background(), provider.MustLookup("ed25519"), path); err != nil {
		fmt.Println(err)
		return
	}

	key, err := p.Signer(context.Background(), path)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ := ssh.NewSignerFromSigner(key)
	sig, _ := s.Sign(rand.Reader, []byte("data"))
	fmt.Println(s.PublicKey().Type(), s.PublicKey().Verify([]byte("data"), sig) == nil)
	// Output: ssh-ed25519 true
}
