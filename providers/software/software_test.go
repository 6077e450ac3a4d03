package software_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/provider/providertest"
	"github.com/offload/offload/providers/software"
)

func TestConformance(t *testing.T) {
	providertest.TestProvider(t, software.New())
}

func TestSignerFromFiles(t *testing.T) {
	dir := t.TempDir()
	p := software.New()
	ctx := context.Background()
	for _, name := range []string{"ed25519", "ecdsa-p256-sha256", "ecdsa-p384-sha384", "rsa-pss-sha256"} {
		alg := provider.MustLookup(name)
		path := filepath.Join(dir, name)
		if _, err := p.GenerateSigner(ctx, alg, "file:"+path); err != nil {
			t.Fatalf("generate %s: %v", name, err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("key file %s: %v %v", path, fi, err)
		}
		for _, ref := range []string{path, "file:" + path, "file://" + path} {
			if !p.CanOpen(ref) {
				t.Fatalf("CanOpen(%q) = false", ref)
			}
			s, err := p.Signer(ctx, ref)
			if err != nil {
				t.Fatalf("open %s: %v", ref, err)
			}
			t.Run(name+"/"+ref, func(t *testing.T) { providertest.TestSigner(t, s, alg) })
		}
		if _, err := p.GenerateSigner(ctx, alg, path); err == nil {
			t.Errorf("generate over an existing file %s succeeded", path)
		}
	}
}

func TestSignerRefusals(t *testing.T) {
	dir := t.TempDir()
	p := software.New()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret-passphrase"))
	if err != nil {
		t.Fatal(err)
	}
	enc := filepath.Join(dir, "enc")
	os.WriteFile(enc, pem.EncodeToMemory(block), 0o600)
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("-----BEGIN NONSENSE-----\nxx\n"), 0o600)
	huge := filepath.Join(dir, "huge")
	os.WriteFile(huge, make([]byte, 2<<20), 0o600)
	for ref, want := range map[string]string{
		enc:                          "passphrase-protected",
		garbage:                      "garbage",
		huge:                         "larger than",
		filepath.Join(dir, "absent"): "no such file",
		"pkcs11:token=x;object=y":    "not a key file",
	} {
		_, err := p.Signer(context.Background(), ref)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret-passphrase") {
			t.Errorf("Signer(%q) = %v, want an error mentioning %q", ref, err, want)
		}
	}
	if p.CanOpen("pkcs11:token=x") {
		t.Error("software provider claims pkcs11: URIs")
	}
}
