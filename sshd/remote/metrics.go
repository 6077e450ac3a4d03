package remote

import (
	"sync"
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/ipc"
)

// Metrics returns the sink the child's registry counts into, and starts
// reporting it to the monitor, when the child's configuration asks for
// it; nil otherwise.
func Metrics(c *ipc.Child) (*provider.Metrics, *Reporter) {
	if !c.Config.Metrics {
		return nil, nil
	}
	m := provider.NewMetrics()
	r := NewReporter(c.Peer, m)
	go r.Run(c.Peer.Done())
	return m, r
}

// Reporter sends a child's counts to the monitor as deltas.
type Reporter struct {
	peer *ipc.Peer
	m    *provider.Metrics
	mu   sync.Mutex
	sent map[[3]string]provider.Sample
}

// NewReporter reports m over p.
func NewReporter(p *ipc.Peer, m *provider.Metrics) *Reporter {
	return &Reporter{peer: p, m: m, sent: map[[3]string]provider.Sample{}}
}

// Run sends the deltas every ipc.MetricsInterval until done is closed.
func (r *Reporter) Run(done <-chan struct{}) {
	t := time.NewTicker(ipc.MetricsInterval)
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
func (r *Reporter) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out ipc.Metrics
	for _, s := range r.m.Snapshot() {
		k := [3]string{s.Provider, s.Algorithm, s.Op}
		d := s.Sub(r.sent[k])
		r.sent[k] = s
		if d.Ops+d.Errors > 0 && len(out.Samples) < ipc.MaxSamples {
			out.Samples = append(out.Samples, ipc.Sample(d))
		}
	}
	if len(out.Samples) > 0 {
		r.peer.Notify(ipc.TypeMetrics, out.Marshal())
	}
}
