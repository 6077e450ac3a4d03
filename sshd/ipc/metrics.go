package ipc

import (
	"fmt"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// MetricsInterval is how often a child sends what its providers counted.
const MetricsInterval = 10 * time.Second

// Bounds of one Metrics message.
const (
	MaxSamples = 256
	maxBuckets = 64
)

// Sample is one provider × algorithm × operation count: provider.Sample
// field for field (sshd/remote and the monitor convert between them).
type Sample struct {
	Provider, Algorithm, Op string
	Ops, Bytes, Errors      uint64
	Timed                   uint64
	Latency                 time.Duration
	Buckets                 []uint64
}

// Metrics carries what a child's providers counted since its last
// Metrics: the monitor adds it to its own, so that one metrics endpoint
// shows every process's work.
type Metrics struct {
	Samples []Sample
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
	if n > MaxSamples {
		return nil, &ProtocolError{Type: TypeMetrics, Err: fmt.Errorf("%d samples, at most %d", n, MaxSamples)}
	}
	m := &Metrics{}
	for i := uint32(0); i < n && d.Err() == nil && d.err == nil; i++ {
		s := Sample{Provider: d.string("provider", maxName), Algorithm: d.string("algorithm", maxName),
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
