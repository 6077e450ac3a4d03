package ipc

import (
	"fmt"
	"sync"
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/wire"
)

// MetricsInterval is how often a child sends what its providers counted.
const MetricsInterval = 10 * time.Second

// Bounds of one Metrics message.
const (
	maxSamples = 256
	maxBuckets = 64
)

// Metrics carries what a child's providers counted since its last
// Metrics: the monitor adds it to its own, so that one metrics endpoint
// shows every process's work.
type Metrics struct {
	Samples []provider.Sample
}

// Marshal encodes m.
func (m *Metrics) Marshal() []byte {
	b := wire.AppendUint32(nil, uint32(len(m.Samples)))
	for _, s := range m.Samples {
		for _, v := range []string{s.Provider, s.Algorithm, s.Op} {
			b = wire.AppendString(b, v)
		}
		for _, v := range []uint64{s.Ops, s.Bytes, s.Errors, s.Timed, uint64(s.Latency)} {
			b = wire.AppendUint64(b, v)
		}
		b = wire.AppendUint32(b, uint32(len(s.Buckets)))
		for _, n := range s.Buckets {
			b = wire.AppendUint64(b, n)
		}
	}
	return b
}

// ParseMetrics decodes a Metrics.
func ParseMetrics(p []byte) (*Metrics, error) {
	d := newDecoder(p)
	n := d.Uint32("count")
	if n > maxSamples {
		return nil, &ProtocolError{Type: TypeMetrics, Err: fmt.Errorf("%d samples, at most %d", n, maxSamples)}
	}
	m := &Metrics{}
	for i := uint32(0); i < n && d.Err() == nil && d.err == nil; i++ {
		s := provider.Sample{Provider: d.string("provider", maxName), Algorithm: d.string("algorithm", maxName),
			Op: d.string("op", maxName)}
		s.Ops, s.Bytes, s.Errors, s.Timed = d.Uint64("ops"), d.Uint64("bytes"), d.Uint64("errors"), d.Uint64("timed")
		s.Latency = time.Duration(d.Uint64("latency"))
		s.Buckets = d.buckets()
		m.Samples = append(m.Samples, s)
	}
	return m, d.done(TypeMetrics)
}

func (d *decoder) buckets() []uint64 {
	n := d.Uint32("buckets")
	if n > maxBuckets && d.err == nil {
		d.err = fmt.Errorf("ipc: %d latency buckets, at most %d", n, maxBuckets)
	}
	var out []uint64
	for i := uint32(0); i < n && d.err == nil && d.Err() == nil; i++ {
		out = append(out, d.Uint64("bucket"))
	}
	return out
}

// Add adds the samples to sink; samples naming an unknown operation are
// skipped.
func (m *Metrics) Add(sink *provider.Metrics) {
	for _, s := range m.Samples {
		sink.Add(s)
	}
}

// MetricsReporter sends a child's counts to the monitor as deltas.
type MetricsReporter struct {
	peer *Peer
	m    *provider.Metrics
	mu   sync.Mutex
	sent map[[3]string]provider.Sample
}

// NewMetricsReporter reports m over p.
func NewMetricsReporter(p *Peer, m *provider.Metrics) *MetricsReporter {
	return &MetricsReporter{peer: p, m: m, sent: map[[3]string]provider.Sample{}}
}

// Run sends the deltas every MetricsInterval until done is closed.
func (r *MetricsReporter) Run(done <-chan struct{}) {
	t := time.NewTicker(MetricsInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.Flush()
		case <-done:
			r.Flush()
			return
		}
	}
}

// Flush sends what was counted since the last Flush.
func (r *MetricsReporter) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out Metrics
	for _, s := range r.m.Snapshot() {
		k := [3]string{s.Provider, s.Algorithm, s.Op}
		d := s.Sub(r.sent[k])
		r.sent[k] = s
		if d.Ops+d.Errors > 0 && len(out.Samples) < maxSamples {
			out.Samples = append(out.Samples, d)
		}
	}
	if len(out.Samples) > 0 {
		r.peer.Notify(TypeMetrics, out.Marshal())
	}
}
