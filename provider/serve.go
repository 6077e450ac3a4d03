package provider

import (
	"context"
	"crypto"
	"crypto/cipher"
	"hash"
	"io"
	"time"
)

// The registry hands out every primitive in a thin wrapper that says where
// it is served (Provenancer) and, when the registry has a Metrics sink,
// counts its work. Bulk operations are counted without reading the clock
// (two clock reads cost more than sealing a small packet); operations
// that can wait on a device (signatures, key agreement, KEMs) are timed.
// Unwrap returns the provider's own primitive.

// servedAEAD is an AEAD from the registry.
type servedAEAD struct {
	cipher.AEAD
	src        *source
	seal, open *Counter // nil without metrics
}

var (
	_ FallibleAEAD   = (*servedAEAD)(nil)
	_ ConcurrentAEAD = (*servedAEAD)(nil)
)

func (a *servedAEAD) Seal(dst, nonce, plaintext, ad []byte) []byte {
	a.seal.add(len(plaintext), nil)
	return a.AEAD.Seal(dst, nonce, plaintext, ad)
}

func (a *servedAEAD) Open(dst, nonce, ciphertext, ad []byte) ([]byte, error) {
	out, err := a.AEAD.Open(dst, nonce, ciphertext, ad)
	a.open.add(len(ciphertext), err)
	return out, err
}

// SealErr seals, returning a provider fault as an error (see FallibleAEAD).
func (a *servedAEAD) SealErr(dst, nonce, plaintext, ad []byte) ([]byte, error) {
	out, err := Seal(a.AEAD, dst, nonce, plaintext, ad)
	a.seal.add(len(plaintext), err)
	return out, err
}

// OpenErr opens with FallibleAEAD's error contract.
func (a *servedAEAD) OpenErr(dst, nonce, ciphertext, ad []byte) ([]byte, error) {
	out, err := Open(a.AEAD, dst, nonce, ciphertext, ad)
	a.open.add(len(ciphertext), err)
	return out, err
}

// Unwrap returns the provider's own AEAD.
func (a *servedAEAD) Unwrap() cipher.AEAD { return a.AEAD }

// Lanes is the provider's AEAD's (see ConcurrentAEAD); the counters are
// atomic, so the wrapper adds nothing to serialise calls.
func (a *servedAEAD) Lanes() int { return Lanes(a.AEAD) }

// Close releases the provider's AEAD (a token session, say).
func (a *servedAEAD) Close() error { return Release(a.AEAD) }

func (a *servedAEAD) Provenance() Provenance { return a.src.provenance(a.AEAD) }

type servedStream struct {
	cipher.Stream
	src *source
	c   *Counter
}

func (s *servedStream) XORKeyStream(dst, src []byte) {
	s.c.add(len(src), nil)
	s.Stream.XORKeyStream(dst, src)
}

func (s *servedStream) Unwrap() cipher.Stream  { return s.Stream }
func (s *servedStream) Close() error           { return Release(s.Stream) }
func (s *servedStream) Provenance() Provenance { return s.src.provenance(s.Stream) }

// servedBlock counts the bytes a block cipher encrypts or decrypts.
type servedBlock struct {
	cipher.Block
	src *source
	c   *Counter
}

func (s *servedBlock) Encrypt(dst, src []byte) {
	s.c.add(s.Block.BlockSize(), nil)
	s.Block.Encrypt(dst, src)
}

func (s *servedBlock) Decrypt(dst, src []byte) {
	s.c.add(s.Block.BlockSize(), nil)
	s.Block.Decrypt(dst, src)
}

func (s *servedBlock) Unwrap() cipher.Block   { return s.Block }
func (s *servedBlock) Close() error           { return Release(s.Block) }
func (s *servedBlock) Provenance() Provenance { return s.src.provenance(s.Block) }

type servedKeyStream struct {
	KeyStream
	src *source
	c   *Counter
}

func (s *servedKeyStream) XORKeyStreamAt(dst, src, nonce []byte, counter uint32) {
	s.c.add(len(src), nil)
	s.KeyStream.XORKeyStreamAt(dst, src, nonce, counter)
}

func (s *servedKeyStream) Unwrap() KeyStream      { return s.KeyStream }
func (s *servedKeyStream) Close() error           { return Release(s.KeyStream) }
func (s *servedKeyStream) Provenance() Provenance { return s.src.provenance(s.KeyStream) }

// servedHash is a MAC or hash: provenance only, nothing counted.
type servedHash struct {
	hash.Hash
	src *source
}

func (h *servedHash) Unwrap() hash.Hash      { return h.Hash }
func (h *servedHash) Close() error           { return Release(h.Hash) }
func (h *servedHash) Provenance() Provenance { return h.src.provenance(h.Hash) }

type servedOneTimeMAC struct {
	OneTimeMAC
	src *source
}

func (m *servedOneTimeMAC) Unwrap() OneTimeMAC     { return m.OneTimeMAC }
func (m *servedOneTimeMAC) Close() error           { return Release(m.OneTimeMAC) }
func (m *servedOneTimeMAC) Provenance() Provenance { return m.src.provenance(m.OneTimeMAC) }

// servedKeyAgreement times SharedSecret as a derivation.
type servedKeyAgreement struct {
	KeyAgreement
	src *source
	c   *Counter
}

func (k *servedKeyAgreement) SharedSecret(peer []byte) ([]byte, error) {
	start := k.c.start()
	s, err := k.KeyAgreement.SharedSecret(peer)
	k.c.timed(start, len(peer), err)
	return s, err
}

func (k *servedKeyAgreement) Unwrap() KeyAgreement   { return k.KeyAgreement }
func (k *servedKeyAgreement) Close() error           { return Release(k.KeyAgreement) }
func (k *servedKeyAgreement) Provenance() Provenance { return k.src.provenance(k.KeyAgreement) }

type servedDecapsulator struct {
	Decapsulator
	src *source
	c   *Counter
}

func (d *servedDecapsulator) Decapsulate(ct []byte) ([]byte, error) {
	start := d.c.start()
	s, err := d.Decapsulator.Decapsulate(ct)
	d.c.timed(start, len(ct), err)
	return s, err
}

func (d *servedDecapsulator) Unwrap() Decapsulator   { return d.Decapsulator }
func (d *servedDecapsulator) Close() error           { return Release(d.Decapsulator) }
func (d *servedDecapsulator) Provenance() Provenance { return d.src.provenance(d.Decapsulator) }

// servedSigner is a signer from the registry: Sign is timed, SignContext
// passes the context on when the provider's signer takes one.
type servedSigner struct {
	crypto.Signer
	src *source
	m   *Metrics
}

func (s *servedSigner) counter(opts crypto.SignerOpts) *Counter {
	if s.m == nil {
		return nil
	}
	return s.m.Counter(s.src.Provider, signatureName(s.Signer.Public(), opts), OpSign)
}

func (s *servedSigner) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	c := s.counter(opts)
	start := c.start()
	sig, err := s.Signer.Sign(rand, digest, opts)
	c.timed(start, len(digest), err)
	return sig, err
}

// SignContext signs honouring ctx (see ContextSigner).
func (s *servedSigner) SignContext(ctx context.Context, rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	c := s.counter(opts)
	start := c.start()
	sig, err := SignContext(ctx, s.Signer, rand, digest, opts)
	c.timed(start, len(digest), err)
	return sig, err
}

func (s *servedSigner) Unwrap() crypto.Signer  { return s.Signer }
func (s *servedSigner) Close() error           { return Release(s.Signer) }
func (s *servedSigner) Provenance() Provenance { return s.src.provenance(s.Signer) }

// servedMessageSigner keeps crypto.MessageSigner for signers that have it.
type servedMessageSigner struct{ *servedSigner }

func (s servedMessageSigner) SignMessage(rand io.Reader, msg []byte, opts crypto.SignerOpts) ([]byte, error) {
	c := s.counter(opts)
	start := c.start()
	sig, err := s.Signer.(crypto.MessageSigner).SignMessage(rand, msg, opts)
	c.timed(start, len(msg), err)
	return sig, err
}

var (
	_ ContextSigner        = (*servedSigner)(nil)
	_ crypto.MessageSigner = servedMessageSigner{}
)

func wrapSigner(s crypto.Signer, src *source, m *Metrics) crypto.Signer {
	w := &servedSigner{Signer: s, src: src, m: m}
	if _, ok := s.(crypto.MessageSigner); ok {
		return servedMessageSigner{w}
	}
	return w
}

// signatureName names the catalog signature algorithm a key and options
// sign with, for metrics labels.
func signatureName(pub crypto.PublicKey, opts crypto.SignerOpts) string {
	if alg := SignatureAlgorithm(pub, opts); alg != nil {
		return alg.Name
	}
	return "signature"
}

// start reads the clock for a timed operation (nothing without metrics).
func (c *Counter) start() time.Time {
	if c == nil {
		return time.Time{}
	}
	return time.Now()
}
