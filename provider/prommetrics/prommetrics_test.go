package prommetrics_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/provider/prommetrics"
	"github.com/offload/offload/providers/software"
)

// pooled is a provider with one session pool to report.
type pooled struct{ *software.Provider }

func (pooled) Name() string { return "tok" }
func (pooled) PoolStats() []provider.PoolStats {
	return []provider.PoolStats{{Provider: "tok", Pool: "unit0", Up: true, InUse: 2, Idle: 1, Max: 8, Waits: 3, Timeouts: 1}}
}

func TestCollectorSignaturesAndPools(t *testing.T) {
	m := provider.NewMetrics()
	reg := provider.New(provider.Config{Metrics: m})
	defer reg.Close()
	reg.Register(software.New())
	reg.Register(pooled{software.New()})
	key := writeKey(t)
	s, err := reg.Signer(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Sign(rand.Reader, []byte("msg"), crypto.Hash(0)); err != nil {
			t.Fatal(err)
		}
	}
	c := prommetrics.New(m)
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP offload_provider_pool_sessions Sessions of the pool, by state (in_use, idle).
# TYPE offload_provider_pool_sessions gauge
offload_provider_pool_sessions{pool="unit0",provider="tok",state="idle"} 1
offload_provider_pool_sessions{pool="unit0",provider="tok",state="in_use"} 2
# HELP offload_provider_pool_wait_timeouts_total Waits that gave up (wait timeout or context).
# TYPE offload_provider_pool_wait_timeouts_total counter
offload_provider_pool_wait_timeouts_total{pool="unit0",provider="tok"} 1
`), "offload_provider_pool_sessions", "offload_provider_pool_wait_timeouts_total"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	preg := prometheus.NewPedanticRegistry()
	preg.MustRegister(c)
	fams, err := preg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "offload_provider_latency_seconds" {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 3 || h.GetSampleSum() <= 0 {
			t.Errorf("latency histogram: %d samples, sum %v", h.GetSampleCount(), h.GetSampleSum())
		}
		return
	}
	t.Errorf("no latency histogram for the signatures")
}

func writeKey(t *testing.T) string {
	t.Helper()
	p := software.New()
	path := t.TempDir() + "/key"
	if _, err := p.GenerateSigner(context.Background(), provider.MustLookup("ed25519"), path); err != nil {
		t.Fatal(err)
	}
	return path
}
