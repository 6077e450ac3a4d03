package providertest_test

import (
	"context"
	"crypto"
	"crypto/cipher"
	"hash"
	"sync"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/provider/providertest"
)

// countingProvider wraps the reference provider so that every primitive it
// hands out counts as one open session until released, as a PKCS #11
// provider's would.
type countingProvider struct {
	stdProvider
	mu        sync.Mutex
	open, max int
}

func (c *countingProvider) acquire() *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open++
	c.max = max(c.max, c.open)
	return &session{c: c}
}

type session struct {
	c    *countingProvider
	once sync.Once
}

func (s *session) Close() error {
	s.once.Do(func() {
		s.c.mu.Lock()
		s.c.open--
		s.c.mu.Unlock()
	})
	return nil
}

type countedAEAD struct {
	cipher.AEAD
	*session
}
type countedStream struct {
	cipher.Stream
	*session
}
type countedKeyStream struct {
	provider.KeyStream
	*session
}
type countedHash struct {
	hash.Hash
	*session
}
type countedOneTime struct {
	provider.OneTimeMAC
	*session
}
type countedKA struct {
	provider.KeyAgreement
	*session
}
type countedDecap struct {
	provider.Decapsulator
	*session
}
type countedSigner struct {
	crypto.Signer
	*session
}

func (c *countingProvider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	a, err := c.stdProvider.NewAEAD(alg, key)
	if err != nil {
		return nil, err
	}
	return countedAEAD{a, c.acquire()}, nil
}

func (c *countingProvider) NewStream(alg *provider.Algorithm, key, iv []byte) (cipher.Stream, error) {
	s, err := c.stdProvider.NewStream(alg, key, iv)
	if err != nil {
		return nil, err
	}
	return countedStream{s, c.acquire()}, nil
}

func (c *countingProvider) NewKeyStream(alg *provider.Algorithm, key []byte) (provider.KeyStream, error) {
	s, err := c.stdProvider.NewKeyStream(alg, key)
	if err != nil {
		return nil, err
	}
	return countedKeyStream{s, c.acquire()}, nil
}

func (c *countingProvider) NewMAC(alg *provider.Algorithm, key []byte) (hash.Hash, error) {
	h, err := c.stdProvider.NewMAC(alg, key)
	if err != nil {
		return nil, err
	}
	return countedHash{h, c.acquire()}, nil
}

func (c *countingProvider) NewHash(alg *provider.Algorithm) (hash.Hash, error) {
	h, err := c.stdProvider.NewHash(alg)
	if err != nil {
		return nil, err
	}
	return countedHash{h, c.acquire()}, nil
}

func (c *countingProvider) NewOneTimeMAC(alg *provider.Algorithm) (provider.OneTimeMAC, error) {
	m, err := c.stdProvider.NewOneTimeMAC(alg)
	if err != nil {
		return nil, err
	}
	return countedOneTime{m, c.acquire()}, nil
}

func (c *countingProvider) NewKeyAgreement(alg *provider.Algorithm) (provider.KeyAgreement, error) {
	k, err := c.stdProvider.NewKeyAgreement(alg)
	if err != nil {
		return nil, err
	}
	return countedKA{k, c.acquire()}, nil
}

func (c *countingProvider) NewDecapsulator(alg *provider.Algorithm) (provider.Decapsulator, error) {
	d, err := c.stdProvider.NewDecapsulator(alg)
	if err != nil {
		return nil, err
	}
	return countedDecap{d, c.acquire()}, nil
}

func (c *countingProvider) GenerateSigner(ctx context.Context, alg *provider.Algorithm, ref string) (crypto.Signer, error) {
	s, err := c.stdProvider.GenerateSigner(ctx, alg, ref)
	if err != nil {
		return nil, err
	}
	return countedSigner{s, c.acquire()}, nil
}

// TestSuiteReleasesPrimitives: after the whole suite nothing is left open,
// and at no time were more than three primitives open at once (the
// PKCS #11 provider's pools are a few sessions deep).
func TestSuiteReleasesPrimitives(t *testing.T) {
	c := &countingProvider{}
	providertest.TestProvider(t, c)
	if c.open != 0 {
		t.Errorf("%d primitives left unreleased", c.open)
	}
	if c.max > 3 {
		t.Errorf("up to %d primitives open at once, want at most 3", c.max)
	}
	t.Logf("at most %d primitives open at once", c.max)
}
