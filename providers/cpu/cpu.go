// Package cpu is offload's provider for cryptography done by CPU
// instructions: AES-GCM, AES-CTR and the AES block cipher (for CBC) where the CPU has AES and carry-less
// multiplication, the ChaCha20 keystream where amd64 has AVX2 and BMI2, and
// SHA-2 where it has SHA instructions.
//
// # Detection
//
// Detect reads golang.org/x/sys/cpu. New registers only what the features
// accelerate, so on a CPU without AES the provider offers no AES at all and
// the registry falls back to the software provider (and the SSH server puts
// chacha20-poly1305 first). Tests pass a hand-made Features to force that.
//
// # Implementation
//
// The primitives are the standard library's, which select the same
// instructions at run time; this provider exists to say so, to rank them
// and to make them pinnable and deniable like any other provider.
package cpu

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"sync/atomic"

	"github.com/offload/offload/provider"
)

// Name is the provider's name in pins, deny lists and explanations.
const Name = "cpu"

// Provider offers what the CPU accelerates.
type Provider struct {
	features Features
	caps     []provider.Capability
	closed   atomic.Bool
}

var (
	_ provider.Provider          = (*Provider)(nil)
	_ provider.AEADProvider      = (*Provider)(nil)
	_ provider.StreamProvider    = (*Provider)(nil)
	_ provider.BlockProvider     = (*Provider)(nil)
	_ provider.KeyStreamProvider = (*Provider)(nil)
	_ provider.HashProvider      = (*Provider)(nil)
)

const hw = provider.FlagHardware | provider.FlagConstantTime

// New returns a provider for the given features (usually Detect()).
func New(f Features) *Provider {
	p := &Provider{features: f}
	add := func(ok bool, op provider.Op, algs ...string) {
		for _, a := range algs {
			if ok {
				p.caps = append(p.caps, provider.Capability{Algorithm: provider.MustLookup(a).Name, Ops: op, Flags: hw})
			}
		}
	}
	add(f.AES && f.CLMUL, provider.OpSeal|provider.OpOpen, "aes128-gcm", "aes256-gcm")
	add(f.AES, provider.OpEncrypt, "aes128-ctr", "aes256-ctr", "aes192-ctr", "aes128", "aes192", "aes256")
	add(f.Arch == "amd64" && f.AVX2 && f.BMI2, provider.OpEncrypt, "chacha20")
	add(f.SHA2, provider.OpHash, "sha256")
	add(f.SHA512, provider.OpHash, "sha384", "sha512")
	return p
}

// Features returns the features the provider was built for.
func (p *Provider) Features() Features { return p.features }

func (p *Provider) Name() string                        { return Name }
func (p *Provider) Kind() provider.Kind                 { return provider.KindCPU }
func (p *Provider) Capabilities() []provider.Capability { return p.caps }

// Close makes the provider refuse new primitives with an error wrapping
// provider.ErrClosed. Primitives already made hold nothing and keep working.
func (p *Provider) Close() error {
	p.closed.Store(true)
	return nil
}

func (p *Provider) check(alg *provider.Algorithm, ops provider.Op) error {
	if p.closed.Load() {
		return fmt.Errorf("cpu: provider %w", provider.ErrClosed)
	}
	if !provider.Supports(p, alg.Name, ops) {
		return &provider.UnsupportedError{Provider: Name, Algorithm: alg.Name}
	}
	return nil
}

// NewAEAD returns AES-GCM on the CPU's AES and carry-less multiply.
func (p *Provider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	if err := p.check(alg, provider.OpSeal); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	return cipher.NewGCM(b)
}

// NewStream returns AES-CTR on the CPU's AES instructions.
func (p *Provider) NewStream(alg *provider.Algorithm, key, iv []byte) (cipher.Stream, error) {
	if alg.Family != provider.FamilyStream {
		return nil, &provider.UnsupportedError{Provider: Name, Algorithm: alg.Name}
	}
	if err := p.check(alg, provider.OpEncrypt); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	if len(iv) != alg.NonceSize {
		return nil, fmt.Errorf("cpu: %s needs a %d-byte IV, got %d", alg.Name, alg.NonceSize, len(iv))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	return cipher.NewCTR(b, iv), nil
}

// NewBlock returns the AES block cipher on the CPU's AES instructions, for
// modes the caller runs (SSH's CBC).
func (p *Provider) NewBlock(alg *provider.Algorithm, key []byte) (cipher.Block, error) {
	if alg.Family != provider.FamilyBlock {
		return nil, &provider.UnsupportedError{Provider: Name, Algorithm: alg.Name}
	}
	if err := p.check(alg, provider.OpEncrypt); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	return b, nil
}

// NewHash returns SHA-2 on the CPU's SHA instructions.
func (p *Provider) NewHash(alg *provider.Algorithm) (hash.Hash, error) {
	if err := p.check(alg, provider.OpHash); err != nil {
		return nil, err
	}
	switch alg.Name {
	case "sha256":
		return sha256.New(), nil
	case "sha384":
		return sha512.New384(), nil
	}
	return sha512.New(), nil
}
