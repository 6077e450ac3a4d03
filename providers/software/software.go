// Package software is offload's portable provider: every catalog algorithm
// in pure Go, from the standard library and golang.org/x/crypto.
//
// # AES
//
// crypto/aes uses AES instructions whenever the CPU has them, so it cannot
// serve as a baseline that needs none. This provider's AES-GCM and AES-CTR
// run on a portable block cipher (package internal/aesgo) and Go's generic
// GCM and CTR modes; the cpu provider offers the fast ones. That keeps the
// ranking honest: where the CPU lacks AES, AES is slow here too, and the
// SSH server puts chacha20-poly1305 first.
//
// # Keys
//
// Signer opens OpenSSH, PKCS #1, SEC 1 and PKCS #8 private key files named
// by a path or a file: URI. GenerateSigner makes in-memory keys, or writes a
// new OpenSSH private key file (mode 0600) when given a reference.
package software

import (
	"crypto"
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"sync/atomic"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/poly1305"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software/internal/umac"
)

// Name is the provider's name in pins, deny lists and explanations.
const Name = "software"

// Provider is the software provider. The zero value is not usable; call New.
type Provider struct {
	caps   []provider.Capability
	closed atomic.Bool
}

// Compile-time checks of the optional interfaces this provider offers.
var (
	_ provider.Provider                  = (*Provider)(nil)
	_ provider.AEADProvider              = (*Provider)(nil)
	_ provider.StreamProvider            = (*Provider)(nil)
	_ provider.BlockProvider             = (*Provider)(nil)
	_ provider.KeyStreamProvider         = (*Provider)(nil)
	_ provider.MACProvider               = (*Provider)(nil)
	_ provider.OneTimeMACProvider        = (*Provider)(nil)
	_ provider.HashProvider              = (*Provider)(nil)
	_ provider.SignerProvider            = (*Provider)(nil)
	_ provider.KeyGenerator              = (*Provider)(nil)
	_ provider.KeyAgreementProvider      = (*Provider)(nil)
	_ provider.GroupKeyAgreementProvider = (*Provider)(nil)
	_ provider.KEMProvider               = (*Provider)(nil)
	_ provider.VerifyProvider            = (*Provider)(nil)
)

// New returns the software provider, which offers every catalog algorithm.
func New() *Provider {
	p := &Provider{}
	for _, a := range provider.Algorithms() {
		p.caps = append(p.caps, provider.Capability{Algorithm: a.Name, Ops: opsOf(a), Flags: flagsOf(a)})
	}
	return p
}

func opsOf(a *provider.Algorithm) provider.Op {
	switch a.Family {
	case provider.FamilyAEAD:
		return provider.OpSeal | provider.OpOpen
	case provider.FamilyStream, provider.FamilyKeyStream, provider.FamilyBlock:
		return provider.OpEncrypt
	case provider.FamilyMAC, provider.FamilyOneTimeMAC:
		return provider.OpMAC
	case provider.FamilySignature:
		return provider.OpSign | provider.OpVerify | provider.OpGenerate
	case provider.FamilyKeyAgreement:
		return provider.OpDerive
	case provider.FamilyKEM:
		return provider.OpEncapsulate | provider.OpDecapsulate
	}
	return provider.OpHash
}

func flagsOf(a *provider.Algorithm) provider.Flag {
	switch {
	case a.Family == provider.FamilyBlock, a.Name == "umac-64", a.Name == "umac-128":
		// Table-driven AES and DES (and UMAC's AES) are not constant-time.
		return aesFlags
	case a.Family == provider.FamilyAEAD || a.Family == provider.FamilyStream:
		if a.Name != "chacha20-poly1305" {
			return aesFlags
		}
	}
	return provider.FlagConstantTime
}

func (p *Provider) Name() string                        { return Name }
func (p *Provider) Kind() provider.Kind                 { return provider.KindSoftware }
func (p *Provider) Capabilities() []provider.Capability { return p.caps }

// Close makes the provider refuse new primitives with an error wrapping
// provider.ErrClosed. Primitives already made hold nothing and keep working.
func (p *Provider) Close() error {
	p.closed.Store(true)
	return nil
}

// live returns the error for a closed provider.
func (p *Provider) live() error {
	if p.closed.Load() {
		return fmt.Errorf("software: provider %w", provider.ErrClosed)
	}
	return nil
}

func unsupported(alg *provider.Algorithm) error {
	return &provider.UnsupportedError{Provider: Name, Algorithm: alg.Name}
}

// Verify checks a signature with Go's standard library (provider.Verify).
func (p *Provider) Verify(alg *provider.Algorithm, pub crypto.PublicKey, input, sig []byte, opts crypto.SignerOpts) error {
	if err := p.live(); err != nil {
		return err
	}
	return provider.Verify(pub, alg, input, sig, opts)
}

// NewAEAD returns AES-GCM on the portable block cipher, or ChaCha20-Poly1305.
func (p *Provider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	switch alg.Name {
	case "aes128-gcm", "aes256-gcm":
		b, err := newBlock(key)
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(b)
	case "chacha20-poly1305":
		return chacha20poly1305.New(key)
	}
	return nil, unsupported(alg)
}

// NewStream returns AES-CTR on the portable block cipher.
func (p *Provider) NewStream(alg *provider.Algorithm, key, iv []byte) (cipher.Stream, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	if alg.Name != "aes128-ctr" && alg.Name != "aes192-ctr" && alg.Name != "aes256-ctr" {
		return nil, unsupported(alg)
	}
	if len(iv) != alg.NonceSize {
		return nil, fmt.Errorf("software: %s needs a %d-byte IV, got %d", alg.Name, alg.NonceSize, len(iv))
	}
	b, err := newBlock(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewCTR(b, iv), nil
}

// keyStream is ChaCha20 with the nonce and counter given per call.
type keyStream struct{ key [chacha20.KeySize]byte }

// NewKeyStream returns ChaCha20 (RFC 8439, 96-bit nonce, 32-bit counter).
func (p *Provider) NewKeyStream(alg *provider.Algorithm, key []byte) (provider.KeyStream, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	if alg.Name != "chacha20" {
		return nil, unsupported(alg)
	}
	ks := &keyStream{}
	copy(ks.key[:], key)
	return ks, nil
}

// XORKeyStreamAt panics on a nonce of the wrong size, a broken invariant of
// the caller (the catalog fixes the size).
func (k *keyStream) XORKeyStreamAt(dst, src, nonce []byte, counter uint32) {
	if len(nonce) != chacha20.NonceSize {
		panic("software: chacha20 needs a 12-byte nonce")
	}
	c, err := chacha20.NewUnauthenticatedCipher(k.key[:], nonce)
	if err != nil {
		panic("software: chacha20: " + err.Error())
	}
	c.SetCounter(counter)
	c.XORKeyStream(dst, src)
}

// NewBlock returns AES on the portable block cipher, or Triple DES (EDE,
// three keys) from crypto/des.
func (p *Provider) NewBlock(alg *provider.Algorithm, key []byte) (cipher.Block, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	switch alg.Name {
	case "aes128", "aes192", "aes256":
		return newBlock(key)
	case "3des":
		return des.NewTripleDESCipher(key)
	}
	return nil, unsupported(alg)
}

// NewMAC returns HMAC over SHA-256, SHA-512, SHA-1 or MD5, or UMAC.
func (p *Provider) NewMAC(alg *provider.Algorithm, key []byte) (hash.Hash, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	switch alg.Name {
	case "hmac-sha256":
		return hmac.New(sha256.New, key), nil
	case "hmac-sha512":
		return hmac.New(sha512.New, key), nil
	case "hmac-sha1":
		return hmac.New(sha1.New, key), nil
	case "hmac-md5":
		return hmac.New(md5.New, key), nil
	case "umac-64", "umac-128":
		b, err := newBlock(key)
		if err != nil {
			return nil, err
		}
		k, err := umac.New(b, newBlock, alg.TagSize)
		if err != nil {
			return nil, err
		}
		return &umacHash{key: k, nonceLen: alg.NonceSize, blockSize: alg.BlockSize}, nil
	}
	return nil, unsupported(alg)
}

type poly struct{}

// NewOneTimeMAC returns Poly1305.
func (p *Provider) NewOneTimeMAC(alg *provider.Algorithm) (provider.OneTimeMAC, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	if alg.Name != "poly1305" {
		return nil, unsupported(alg)
	}
	return poly{}, nil
}

// Sum panics when out or key have the wrong size: the catalog fixes them.
func (poly) Sum(out, msg, key []byte) {
	if len(out) != poly1305.TagSize || len(key) != 32 {
		panic("software: poly1305 needs a 16-byte output and a 32-byte key")
	}
	poly1305.Sum((*[poly1305.TagSize]byte)(out), msg, (*[32]byte)(key))
}

func (poly) Verify(tag, msg, key []byte) bool {
	if len(tag) != poly1305.TagSize || len(key) != 32 {
		return false
	}
	return poly1305.Verify((*[poly1305.TagSize]byte)(tag), msg, (*[32]byte)(key))
}

// NewHash returns SHA-1 (for the legacy key exchanges), SHA-256, SHA-384
// or SHA-512.
func (p *Provider) NewHash(alg *provider.Algorithm) (hash.Hash, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	switch alg.Name {
	case "sha1":
		return sha1.New(), nil
	case "sha256":
		return sha256.New(), nil
	case "sha384":
		return sha512.New384(), nil
	case "sha512":
		return sha512.New(), nil
	}
	return nil, unsupported(alg)
}
