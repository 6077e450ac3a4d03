package provider

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics counts the work done by the primitives a registry hands out,
// per provider, algorithm and operation, and reaches the session pools of
// the registries that use it. Several registries may share one Metrics
// (offload sshd keeps one across reloads). A nil *Metrics counts nothing.
//
// # What is counted
//
//   - seal, open, encrypt: every call, with the bytes of its input; not
//     timed (two clock reads cost more than sealing a small packet).
//   - sign, verify, derive, encapsulate, decapsulate: every call, timed;
//     generate: the ephemeral key of a key agreement or KEM, timed.
//   - errors: calls that failed, also counted in the totals.
//
// MACs and hashes are not counted.
type Metrics struct {
	mu       sync.Mutex
	counters map[metricKey]*Counter
	sources  map[*Registry]struct{}
}

type metricKey struct {
	Provider, Algorithm string
	Op                  Op
}

// LatencyBuckets are the upper bounds of the latency histogram of timed
// operations, from a CPU signature to a slow network HSM.
var LatencyBuckets = []time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, time.Second,
}

// Counter holds the totals of one provider × algorithm × operation.
// Latency is the total time of the Timed calls; Buckets[i] counts timed
// calls that took at most LatencyBuckets[i] (not cumulative; the last
// counts the slower ones).
type Counter struct {
	Ops     atomic.Uint64
	Bytes   atomic.Uint64
	Errors  atomic.Uint64
	Timed   atomic.Uint64
	Latency atomic.Int64 // nanoseconds
	Buckets [14]atomic.Uint64
}

// NewMetrics returns an empty metrics sink.
func NewMetrics() *Metrics {
	return &Metrics{counters: map[metricKey]*Counter{}, sources: map[*Registry]struct{}{}}
}

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

// Observe records one operation done outside the registry's primitives
// (a caller's own verification, say); d <= 0 leaves it untimed.
func (m *Metrics) Observe(provider, alg string, op Op, bytes int, d time.Duration, err error) {
	if m == nil {
		return
	}
	c := m.Counter(provider, alg, op)
	c.add(bytes, err)
	if d > 0 {
		c.observe(d)
	}
}

// add counts one call of n bytes; nil-safe.
func (c *Counter) add(n int, err error) {
	if c == nil {
		return
	}
	c.Ops.Add(1)
	c.Bytes.Add(uint64(n))
	if err != nil {
		c.Errors.Add(1)
	}
}

// timed counts one call that began at start; nil-safe.
func (c *Counter) timed(start time.Time, n int, err error) {
	if c == nil {
		return
	}
	c.add(n, err)
	c.observe(time.Since(start))
}

func (c *Counter) observe(d time.Duration) {
	c.Timed.Add(1)
	c.Latency.Add(int64(d))
	i := sort.Search(len(LatencyBuckets), func(i int) bool { return d <= LatencyBuckets[i] })
	c.Buckets[i].Add(1)
}

// Sample is one row of a Metrics snapshot.
type Sample struct {
	Provider, Algorithm, Op string
	Ops, Bytes, Errors      uint64
	Timed                   uint64
	Latency                 time.Duration
	// Buckets counts timed calls per LatencyBuckets bound, not
	// cumulative; the last entry counts the slower ones.
	Buckets []uint64
}

// Snapshot returns every counter, sorted.
func (m *Metrics) Snapshot() []Sample {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	out := make([]Sample, 0, len(m.counters))
	for k, c := range m.counters {
		s := Sample{Provider: k.Provider, Algorithm: k.Algorithm, Op: k.Op.String(),
			Ops: c.Ops.Load(), Bytes: c.Bytes.Load(), Errors: c.Errors.Load(),
			Timed: c.Timed.Load(), Latency: time.Duration(c.Latency.Load())}
		if s.Timed > 0 {
			s.Buckets = make([]uint64, len(c.Buckets))
			for i := range c.Buckets {
				s.Buckets[i] = c.Buckets[i].Load()
			}
		}
		out = append(out, s)
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

// Pools returns the session pool statistics of every provider of every
// open registry using m.
func (m *Metrics) Pools() []PoolStats {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	regs := make([]*Registry, 0, len(m.sources))
	for r := range m.sources {
		regs = append(regs, r)
	}
	m.mu.Unlock()
	var out []PoolStats
	for _, r := range regs {
		out = append(out, r.PoolStats()...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].Pool < out[j].Pool
	})
	return out
}

func (m *Metrics) attach(r *Registry) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.sources[r] = struct{}{}
	m.mu.Unlock()
}

func (m *Metrics) detach(r *Registry) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.sources, r)
	m.mu.Unlock()
}

// counter is m.Counter, nil for a nil m.
func (m *Metrics) counter(p Provider, alg *Algorithm, op Op) *Counter {
	if m == nil {
		return nil
	}
	return m.Counter(p.Name(), alg.Name, op)
}

// Add adds s — counts made elsewhere, such as by another process of the
// same server — to m's counter of s.Provider, s.Algorithm and s.Op,
// timed calls and latency buckets included. It fails for an unknown Op.
func (m *Metrics) Add(s Sample) error {
	op, ok := ParseOp(s.Op)
	if !ok {
		return fmt.Errorf("provider: metrics: unknown operation %q", s.Op)
	}
	c := m.Counter(s.Provider, s.Algorithm, op)
	c.Ops.Add(s.Ops)
	c.Bytes.Add(s.Bytes)
	c.Errors.Add(s.Errors)
	c.Timed.Add(s.Timed)
	c.Latency.Add(int64(s.Latency))
	for i := range min(len(s.Buckets), len(c.Buckets)) {
		c.Buckets[i].Add(s.Buckets[i])
	}
	return nil
}

// Sub returns what s counted since prev, an earlier sample of the same
// counter (for sending deltas).
func (s Sample) Sub(prev Sample) Sample {
	d := s
	d.Ops, d.Bytes, d.Errors, d.Timed = s.Ops-prev.Ops, s.Bytes-prev.Bytes, s.Errors-prev.Errors, s.Timed-prev.Timed
	d.Latency = s.Latency - prev.Latency
	d.Buckets = nil
	if len(s.Buckets) > 0 {
		d.Buckets = make([]uint64, len(s.Buckets))
		for i := range s.Buckets {
			d.Buckets[i] = s.Buckets[i]
			if i < len(prev.Buckets) {
				d.Buckets[i] -= prev.Buckets[i]
			}
		}
	}
	return d
}

// ParseOp returns the single operation named as Op.String prints it.
func ParseOp(name string) (Op, bool) {
	for i, n := range opNames {
		if n == name {
			return Op(1) << i, true
		}
	}
	return 0, false
}
