// Package prommetrics exports a provider.Metrics — the work of every
// primitive a registry handed out, and the session pools of its providers
// — as a prometheus.Collector:
//
//	m := provider.NewMetrics()
//	reg := provider.New(provider.Config{Metrics: m})
//	prometheus.MustRegister(prommetrics.New(m))
//
// # Metrics
//
// Labels: provider is the registered provider's name ("cpu", "software",
// "pkcs11"); algorithm a catalog name ("aes128-gcm", "ecdsa-p256-sha256");
// op one of seal, open, encrypt, sign, verify, derive, encapsulate,
// decapsulate, generate; pool a PKCS #11 token's label.
//
//	offload_provider_operations_total{provider,algorithm,op}  calls, failed ones included
//	offload_provider_errors_total{provider,algorithm,op}      calls that failed
//	offload_provider_bytes_total{provider,algorithm,op}       bytes of input (plaintext sealed, ciphertext opened, digests signed)
//	offload_provider_latency_seconds{provider,algorithm,op}   histogram of the timed calls (sign, verify,
//	                                                          derive, encapsulate, decapsulate, generate);
//	                                                          seal, open and encrypt are not timed
//	offload_provider_pool_up{provider,pool}                   1 while the token is reachable
//	offload_provider_pool_sessions{provider,pool,state}       sessions "in_use" and "idle"
//	offload_provider_pool_sessions_max{provider,pool}         pool size
//	offload_provider_pool_waits_total{provider,pool}          requests that found every session busy
//	offload_provider_pool_wait_timeouts_total{provider,pool}  ... and gave up (wait timeout or context)
//	offload_provider_pool_wait_seconds_total{provider,pool}   time spent waiting
//	offload_provider_pool_recoveries_total{provider,pool}     times the token was reattached
//
// Values are read at scrape time; nothing is copied between scrapes.
package prommetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/offload/offload/provider"
)

// Collector exports one provider.Metrics.
type Collector struct {
	m                           *provider.Metrics
	ops, errs, bytes, latency   *prometheus.Desc
	up, sessions, max           *prometheus.Desc
	waits, timeouts, waitS, rec *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a collector for m.
func New(m *provider.Metrics) *Collector {
	ops := []string{"provider", "algorithm", "op"}
	pool := []string{"provider", "pool"}
	d := func(name, help string, l []string) *prometheus.Desc {
		return prometheus.NewDesc("offload_provider_"+name, help, l, nil)
	}
	return &Collector{m: m,
		ops:      d("operations_total", "Operations of a provider's primitives for an algorithm, failed ones included.", ops),
		errs:     d("errors_total", "Operations that failed.", ops),
		bytes:    d("bytes_total", "Bytes of input processed.", ops),
		latency:  d("latency_seconds", "Duration of timed operations (signatures, verifications, key agreements, KEMs, key generation).", ops),
		up:       d("pool_up", "1 while the token behind the session pool is reachable.", pool),
		sessions: d("pool_sessions", "Sessions of the pool, by state (in_use, idle).", append(pool, "state")),
		max:      d("pool_sessions_max", "Size of the session pool.", pool),
		waits:    d("pool_waits_total", "Requests that found every session busy and waited.", pool),
		timeouts: d("pool_wait_timeouts_total", "Waits that gave up (wait timeout or context).", pool),
		waitS:    d("pool_wait_seconds_total", "Time spent waiting for a session.", pool),
		rec:      d("pool_recoveries_total", "Times the token was reattached after a fault.", pool),
	}
}

// Describe sends every descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.ops, c.errs, c.bytes, c.latency, c.up, c.sessions, c.max, c.waits, c.timeouts, c.waitS, c.rec} {
		ch <- d
	}
}

// Collect reads the counters and pools now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.m.Snapshot() {
		l := []string{s.Provider, s.Algorithm, s.Op}
		ch <- prometheus.MustNewConstMetric(c.ops, prometheus.CounterValue, float64(s.Ops), l...)
		ch <- prometheus.MustNewConstMetric(c.errs, prometheus.CounterValue, float64(s.Errors), l...)
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(s.Bytes), l...)
		if s.Timed > 0 {
			ch <- prometheus.MustNewConstHistogram(c.latency, s.Timed, s.Latency.Seconds(), buckets(s.Buckets), l...)
		}
	}
	for _, p := range c.m.Pools() {
		l := []string{p.Provider, p.Pool}
		up := 0.0
		if p.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, l...)
		ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(p.InUse), p.Provider, p.Pool, "in_use")
		ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(p.Idle), p.Provider, p.Pool, "idle")
		ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(p.Max), l...)
		ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(p.Waits), l...)
		ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(p.Timeouts), l...)
		ch <- prometheus.MustNewConstMetric(c.waitS, prometheus.CounterValue, p.WaitTime.Seconds(), l...)
		ch <- prometheus.MustNewConstMetric(c.rec, prometheus.CounterValue, float64(p.Recoveries), l...)
	}
}

// buckets turns per-bound counts into Prometheus's cumulative buckets;
// the last count (slower than every bound) is only in the total.
func buckets(counts []uint64) map[float64]uint64 {
	out := make(map[float64]uint64, len(provider.LatencyBuckets))
	var sum uint64
	for i, b := range provider.LatencyBuckets {
		if i < len(counts) {
			sum += counts[i]
		}
		out[b.Seconds()] = sum
	}
	return out
}
