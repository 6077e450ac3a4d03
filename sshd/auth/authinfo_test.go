package auth

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// The line of a publickey success names the key as authorized_keys does
// (type, base64 of the blob the client sent) and, for a security key,
// the signature's counter, as OpenSSH's ExposeAuthInfo writes it.
func TestPublicKeyInfo(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	want := "publickey " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
	if got := publicKeyInfo(k.Marshal(), &signature{}); got != want {
		t.Errorf("plain key: %q, want %q", got, want)
	}
	sk := &signature{sk: true, Rest: []byte{1, 0, 0, 1, 2}}
	if got := publicKeyInfo(k.Marshal(), sk); got != want+" signature count = 258" {
		t.Errorf("security key: %q", got)
	}
	if got := publicKeyInfo([]byte{0, 0, 0, 9}, nil); got != "publickey" {
		t.Errorf("truncated blob: %q", got)
	}
}
