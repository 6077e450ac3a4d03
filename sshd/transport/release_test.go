package transport

import (
	"crypto/cipher"
	"hash"
	"sync/atomic"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
)

// countingProvider is the software provider whose bulk primitives count
// how many are open, as a token's sessions would be.
type countingProvider struct {
	*software.Provider
	open, made atomic.Int64
}

func (p *countingProvider) Name() string { return "counting" }

type closer struct{ p *countingProvider }

func (c closer) Close() error { c.p.open.Add(-1); return nil }

func (p *countingProvider) track() closer {
	p.open.Add(1)
	p.made.Add(1)
	return closer{p}
}

type countedAEAD struct {
	cipher.AEAD
	closer
}
type countedStream struct {
	cipher.Stream
	closer
}
type countedKeyStream struct {
	provider.KeyStream
	closer
}
type countedMAC struct {
	hash.Hash
	closer
}

func (p *countingProvider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	a, err := p.Provider.NewAEAD(alg, key)
	if err != nil {
		return nil, err
	}
	return countedAEAD{a, p.track()}, nil
}

func (p *countingProvider) NewStream(alg *provider.Algorithm, key, iv []byte) (cipher.Stream, error) {
	s, err := p.Provider.NewStream(alg, key, iv)
	if err != nil {
		return nil, err
	}
	return countedStream{s, p.track()}, nil
}

func (p *countingProvider) NewKeyStream(alg *provider.Algorithm, key []byte) (provider.KeyStream, error) {
	s, err := p.Provider.NewKeyStream(alg, key)
	if err != nil {
		return nil, err
	}
	return countedKeyStream{s, p.track()}, nil
}

func (p *countingProvider) NewMAC(alg *provider.Algorithm, key []byte) (hash.Hash, error) {
	m, err := p.Provider.NewMAC(alg, key)
	if err != nil {
		return nil, err
	}
	return countedMAC{m, p.track()}, nil
}

// TestCiphersReleased: every primitive of every key set is released on
// rekey and on close.
func TestCiphersReleased(t *testing.T) {
	for _, cm := range cipherMACCombos()[:4] {
		t.Run(cm[0]+"/"+cm[1], func(t *testing.T) {
			cp := &countingProvider{Provider: software.New()}
			reg := provider.New(provider.Config{})
			if err := reg.Register(cp); err != nil {
				t.Fatal(err)
			}
			ts := newTestServer(t, &Config{Registry: reg, RekeyBytes: 64 << 10})
			cl, reqs := ts.dial(t, clientConfig("", cm[0], cm[1], ""))
			push(t, cl, 1<<20)
			pullFrom(t, cl, reqs, 1<<20)
			c, _ := ts.lastConn()
			if c.KexCount() < 3 || cp.made.Load() < 6 {
				t.Fatalf("%d exchanges, %d primitives made", c.KexCount(), cp.made.Load())
			}
			cl.Close()
			if !waitFor(func() bool { return cp.open.Load() == 0 }) {
				t.Fatalf("%d of %d primitives still open after close", cp.open.Load(), cp.made.Load())
			}
		})
	}
}
