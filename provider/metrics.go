package provider

import (
	"crypto/cipher"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics counts the work done by the primitives a registry hands out,
// per provider, algorithm and operation. A nil *Metrics counts nothing and
// wraps nothing, so the hot path pays only when metrics are wanted.
type Metrics struct {
	mu       sync.Mutex
	counters map[metricKey]*Counter
}

type metricKey struct {
	Provider, Algorithm string
	Op                  Op
}

// Counter holds the totals of one provider × algorithm × operation.
// Latency is the total time spent in calls that are timed.
type Counter struct {
	Ops     atomic.Uint64
	Bytes   atomic.Uint64
	Errors  atomic.Uint64
	Latency atomic.Int64 // nanoseconds
}

// NewMetrics returns an empty metrics sink.
func NewMetrics() *Metrics { return &Metrics{counters: map[metricKey]*Counter{}} }

// Counter returns the counter for provider, algorithm and op, creating it.
func (m *Metrics) Counter(provider, alg string, op Op) *Counter {
	k := metricKey{provider, alg, op}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.counters[k]
	if !ok {
		c = new(Counter)
		m.counters[k] = c
	}
	return c
}

// Sample is one row of a Metrics snapshot.
type Sample struct {
	Provider, Algorithm, Op string
	Ops, Bytes, Errors      uint64
	Latency                 time.Duration
}

// Snapshot returns every counter, sorted.
func (m *Metrics) Snapshot() []Sample {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	out := make([]Sample, 0, len(m.counters))
	for k, c := range m.counters {
		out = append(out, Sample{Provider: k.Provider, Algorithm: k.Algorithm, Op: k.Op.String(),
			Ops: c.Ops.Load(), Bytes: c.Bytes.Load(), Errors: c.Errors.Load(), Latency: time.Duration(c.Latency.Load())})
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		if a.Algorithm != b.Algorithm {
			return a.Algorithm < b.Algorithm
		}
		return a.Op < b.Op
	})
	return out
}

func (m *Metrics) count(p Provider, alg *Algorithm, op Op, n int, err error) {
	if m == nil {
		return
	}
	c := m.Counter(p.Name(), alg.Name, op)
	c.Ops.Add(1)
	c.Bytes.Add(uint64(n))
	if err != nil {
		c.Errors.Add(1)
	}
}

// countedAEAD counts seals and opens. Latency is not timed per packet:
// two clock reads would cost more than sealing a small packet.
type countedAEAD struct {
	cipher.AEAD
	seal, open *Counter
}

func (a *countedAEAD) Seal(dst, nonce, plaintext, ad []byte) []byte {
	a.seal.Ops.Add(1)
	a.seal.Bytes.Add(uint64(len(plaintext)))
	return a.AEAD.Seal(dst, nonce, plaintext, ad)
}

func (a *countedAEAD) Open(dst, nonce, ciphertext, ad []byte) ([]byte, error) {
	out, err := a.AEAD.Open(dst, nonce, ciphertext, ad)
	a.open.Ops.Add(1)
	a.open.Bytes.Add(uint64(len(ciphertext)))
	if err != nil {
		a.open.Errors.Add(1)
	}
	return out, err
}

// Unwrap returns the provider's own AEAD.
func (a *countedAEAD) Unwrap() cipher.AEAD { return a.AEAD }

func (m *Metrics) wrapAEAD(p Provider, alg *Algorithm, a cipher.AEAD) cipher.AEAD {
	if m == nil {
		return a
	}
	return &countedAEAD{AEAD: a, seal: m.Counter(p.Name(), alg.Name, OpSeal), open: m.Counter(p.Name(), alg.Name, OpOpen)}
}

type countedStream struct {
	cipher.Stream
	c *Counter
}

func (s *countedStream) XORKeyStream(dst, src []byte) {
	s.c.Ops.Add(1)
	s.c.Bytes.Add(uint64(len(src)))
	s.Stream.XORKeyStream(dst, src)
}

func (m *Metrics) wrapStream(p Provider, alg *Algorithm, s cipher.Stream) cipher.Stream {
	if m == nil {
		return s
	}
	return &countedStream{Stream: s, c: m.Counter(p.Name(), alg.Name, OpEncrypt)}
}

type countedKeyStream struct {
	KeyStream
	c *Counter
}

func (s *countedKeyStream) XORKeyStreamAt(dst, src, nonce []byte, counter uint32) {
	s.c.Ops.Add(1)
	s.c.Bytes.Add(uint64(len(src)))
	s.KeyStream.XORKeyStreamAt(dst, src, nonce, counter)
}

func (m *Metrics) wrapKeyStream(p Provider, alg *Algorithm, s KeyStream) KeyStream {
	if m == nil {
		return s
	}
	return &countedKeyStream{KeyStream: s, c: m.Counter(p.Name(), alg.Name, OpEncrypt)}
}

// Close releases the provider's AEAD (a token session, say).
func (a *countedAEAD) Close() error { return Release(a.AEAD) }
