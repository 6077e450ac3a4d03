package software

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/fileperm"
	"github.com/offload/offload/provider"
)

// maxKeyFile bounds what Signer reads: private key files are a few KiB.
const maxKeyFile = 1 << 20

// keyPath returns the file a key reference names: "file:PATH",
// "file:///PATH" or a plain path. ok is false for other URI schemes.
func keyPath(ref string) (path string, ok bool) {
	if strings.HasPrefix(ref, "file:") {
		u, err := url.Parse(ref)
		if err != nil {
			return "", false
		}
		if u.Opaque != "" {
			return u.Opaque, true
		}
		return u.Path, u.Path != ""
	}
	if scheme, _, found := strings.Cut(ref, ":"); found && !strings.ContainsAny(scheme, "/.") && len(scheme) > 1 {
		return "", false // another scheme, such as pkcs11:
	}
	return ref, ref != ""
}

// CanOpen reports whether ref names a key file.
func (p *Provider) CanOpen(ref string) bool {
	_, ok := keyPath(ref)
	return ok
}

// Signer opens a private key file. Passphrase-protected files are refused
// with a clear error; offload does not prompt. So is a file the process's
// user owns that group or others may access, as OpenSSH refuses it
// ("UNPROTECTED PRIVATE KEY FILE", see internal/fileperm).
func (p *Provider) Signer(_ context.Context, ref string) (crypto.Signer, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	path, ok := keyPath(ref)
	if !ok {
		return nil, fmt.Errorf("software: %q is not a key file reference", ref)
	}
	b, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	key, err := ssh.ParseRawPrivateKey(b)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("software: key %s is passphrase-protected; offload needs an unencrypted key file or a token", path)
	}
	if err != nil {
		return nil, fmt.Errorf("software: key %s: %w", path, err)
	}
	return asSigner(key, path)
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("software: %w", err)
	}
	defer f.Close()
	if err := fileperm.Check(f, path, "private key"); err != nil {
		return nil, fmt.Errorf("software: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("software: read %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("software: key file %s is larger than %d bytes", path, maxKeyFile)
	}
	return b, nil
}

func asSigner(key any, path string) (crypto.Signer, error) {
	switch k := key.(type) {
	case *ed25519.PrivateKey:
		return *k, nil
	case ed25519.PrivateKey, *ecdsa.PrivateKey, *rsa.PrivateKey:
		return k.(crypto.Signer), nil
	}
	return nil, fmt.Errorf("software: key %s has unsupported type %T", path, key)
}

// GenerateSigner makes a key for alg: in memory when ref is empty, else
// also written to the file ref names (which must not exist yet).
func (p *Provider) GenerateSigner(_ context.Context, alg *provider.Algorithm, ref string) (crypto.Signer, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	bits := 2048
	if ref != "" {
		bits = 3072
	}
	s, err := generate(alg, bits)
	if err != nil || ref == "" {
		return s, err
	}
	path, ok := keyPath(ref)
	if !ok {
		return nil, fmt.Errorf("software: %q is not a key file reference", ref)
	}
	return s, writeKey(path, s)
}

func generate(alg *provider.Algorithm, rsaBits int) (crypto.Signer, error) {
	if alg.Family != provider.FamilySignature {
		return nil, &provider.WrongFamilyError{Algorithm: alg.Name, Got: alg.Family, Want: provider.FamilySignature}
	}
	switch {
	case alg.Name == "ed25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	case alg.Name == "ecdsa-p256-sha256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case alg.Name == "ecdsa-p384-sha384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case alg.Name == "ecdsa-p521-sha512":
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case strings.HasPrefix(alg.Name, "rsa-"):
		return rsa.GenerateKey(rand.Reader, rsaBits)
	}
	return nil, unsupported(alg)
}

func writeKey(path string, s crypto.Signer) error {
	block, err := ssh.MarshalPrivateKey(s, "")
	if err != nil {
		return fmt.Errorf("software: marshal key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("software: %w", err)
	}
	if err := pem.Encode(f, block); err != nil {
		f.Close()
		return fmt.Errorf("software: write %s: %w", path, err)
	}
	return f.Close()
}
