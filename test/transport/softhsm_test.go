package transport_test

import (
	"context"
	"crypto"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd"
)

// tokenHostKeys makes an Ed25519 and an ECDSA P-256 host key in a
// throwaway SoftHSM token and opens them through a registry.
func tokenHostKeys(t *testing.T) (*provider.Registry, map[string]crypto.Signer) {
	return tokenHostKeysB(t)
}

func tokenHostKeysB(t testing.TB) (*provider.Registry, map[string]crypto.Signer) {
	t.Helper()
	if !pkcs11.Available {
		testenv.Missing(t, "PKCS #11 support (built without cgo)", "build with CGO_ENABLED=1")
	}
	tok := softhsmtest.NewToken(t, "hostkeys")
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg := provider.New(provider.Config{})
	t.Cleanup(func() { reg.Close() })
	for _, pr := range []provider.Provider{cpu.New(cpu.Detect()), p, software.New()} {
		if err := reg.Register(pr); err != nil {
			t.Fatal(err)
		}
	}
	keys := map[string]crypto.Signer{}
	for alg, kt := range map[string]pkcs11.KeyType{"ssh-ed25519": pkcs11.Ed25519, "ecdsa-sha2-nistp256": pkcs11.ECDSAP256} {
		ref := tok.URI("host-" + string(kt))
		if _, err := p.Generate(context.Background(), ref, kt); err != nil {
			t.Fatalf("generate %s: %v", kt, err)
		}
		s, err := reg.Signer(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		keys[alg] = s
	}
	return reg, keys
}

// TestOpenSSHHostKeyInToken: the OpenSSH client, with only the token's
// public key in known_hosts and strict checking, logs in; so the kex
// signature was made by the token.
func TestOpenSSHHostKeyInToken(t *testing.T) {
	reg, keys := tokenHostKeys(t)
	var signers []crypto.Signer
	for _, s := range keys {
		signers = append(signers, s)
	}
	f := newFixture(t, &sshd.Config{Registry: reg, HostKeys: signers})
	for alg, s := range keys {
		t.Run(alg, func(t *testing.T) {
			pub, err := ssh.NewPublicKey(s.Public())
			if err != nil {
				t.Fatal(err)
			}
			kh := filepath.Join(t.TempDir(), "known_hosts")
			line := "[127.0.0.1]:" + f.port + " " + string(ssh.MarshalAuthorizedKey(pub))
			if err := os.WriteFile(kh, []byte(line), 0o600); err != nil {
				t.Fatal(err)
			}
			opts := []string{"HostKeyAlgorithms=" + alg, "StrictHostKeyChecking=yes", "UserKnownHostsFile=" + kh}
			f.checkSFTP(t, opts)
			// A different key in known_hosts must be refused.
			other, _ := ssh.NewPublicKey(allHostKeys()[0].Public())
			if alg != "ssh-ed25519" {
				other, _ = ssh.NewPublicKey(allHostKeys()[1].Public())
			}
			line = "[127.0.0.1]:" + f.port + " " + string(ssh.MarshalAuthorizedKey(other))
			if err := os.WriteFile(kh, []byte(line), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := f.sftpErr(t, opts, "pwd\n"); err == nil {
				t.Fatalf("a wrong host key was accepted: %s", out)
			}
		})
	}
}
