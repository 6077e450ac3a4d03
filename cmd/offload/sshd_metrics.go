package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/offload/offload/sshd"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/provider/prommetrics"
)

// daemonStats are the server-wide counters the daemon keeps itself.
type daemonStats struct {
	accepted, active, reloads, reloadErrors atomic.Int64
	rx, tx                                  atomic.Uint64 // bytes on the wire, all connections
	loginsMu                                sync.Mutex
	logins                                  map[loginKey]uint64 // by method and result
}

// loginKey labels offload_sshd_logins_total.
type loginKey struct{ method, result string }

// loginResult counts one authentication outcome (auth.Config.OnResult).
func (s *daemonStats) loginResult(method, result string) {
	s.loginsMu.Lock()
	defer s.loginsMu.Unlock()
	if s.logins == nil {
		s.logins = map[loginKey]uint64{}
	}
	s.logins[loginKey{method, result}]++
}

// loginCounts copies the login counters, for a scrape.
func (s *daemonStats) loginCounts() map[loginKey]uint64 {
	s.loginsMu.Lock()
	defer s.loginsMu.Unlock()
	return maps.Clone(s.logins)
}

// connEnded counts a separated server's connection when it ends.
func (s *daemonStats) connEnded(e sshd.ConnEnd) {
	s.rx.Add(e.BytesIn)
	s.tx.Add(e.BytesOut)
}

// countedConn counts the bytes a connection reads and writes, its own
// and into the daemon's totals.
type countedConn struct {
	net.Conn
	stats  *daemonStats
	rx, tx atomic.Uint64
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.rx.Add(uint64(n))
	c.stats.rx.Add(uint64(n))
	return n, err
}

func (c *countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.tx.Add(uint64(n))
	c.stats.tx.Add(uint64(n))
	return n, err
}

// SyscallConn exposes the socket, for the transport's TCP_QUICKACK; it
// fails when the wrapped connection is not a socket.
func (c *countedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("offload: connection has no socket")
}

// metricsCollector exports the daemon's counters; the providers' work and
// session pools come from provider/prommetrics. Both are read at scrape
// time, so nothing is copied between scrapes.
type metricsCollector struct {
	stats *daemonStats

	accepted, active, reloads, reloadFails *prometheus.Desc
	rx, tx                                 *prometheus.Desc
	logins, build                          *prometheus.Desc
}

func newMetricsCollector(stats *daemonStats) *metricsCollector {
	d := func(name, help string, l []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, l, nil)
	}
	return &metricsCollector{stats: stats,
		accepted:    d("offload_sshd_connections_accepted_total", "TCP connections accepted.", nil),
		active:      d("offload_sshd_connections_active", "Connections being served.", nil),
		reloads:     d("offload_sshd_reloads_total", "Configuration reloads (SIGHUP) applied.", nil),
		reloadFails: d("offload_sshd_reload_failures_total", "Configuration reloads refused (the old configuration stayed).", nil),
		rx:          d("offload_sshd_received_bytes_total", "Bytes read from clients (SSH packets, encrypted).", nil),
		tx:          d("offload_sshd_sent_bytes_total", "Bytes written to clients (SSH packets, encrypted).", nil),
		logins: d("offload_sshd_logins_total", "User authentication outcomes by method and result (accepted, failed, "+
			"partial: a method of several AuthenticationMethods), as the auth log lines.", []string{"method", "result"}),
		build: d("offload_build_info", "Always 1; the labels say which offload build runs.", []string{"version", "goversion", "goarch"}),
	}
}

func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.accepted, c.active, c.reloads, c.reloadFails, c.rx, c.tx, c.logins, c.build} {
		ch <- d
	}
}

func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.accepted, prometheus.CounterValue, float64(c.stats.accepted.Load()))
	ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(c.stats.active.Load()))
	ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(c.stats.reloads.Load()))
	ch <- prometheus.MustNewConstMetric(c.reloadFails, prometheus.CounterValue, float64(c.stats.reloadErrors.Load()))
	ch <- prometheus.MustNewConstMetric(c.rx, prometheus.CounterValue, float64(c.stats.rx.Load()))
	ch <- prometheus.MustNewConstMetric(c.tx, prometheus.CounterValue, float64(c.stats.tx.Load()))
	for k, n := range c.stats.loginCounts() {
		ch <- prometheus.MustNewConstMetric(c.logins, prometheus.CounterValue, float64(n), k.method, k.result)
	}
	ch <- prometheus.MustNewConstMetric(c.build, prometheus.GaugeValue, 1, Version, runtime.Version(), runtime.GOARCH)
}

// metricsServer serves /metrics on addr until ctx is done and returns the
// address it listens on. The listener is opened before it returns, so a
// bad address fails the start.
func metricsServer(ctx context.Context, addr string, m *provider.Metrics, stats *daemonStats, log *slog.Logger) (string, error) {
	reg := prometheus.NewRegistry()
	// beside offload's own: the process (CPU, memory, file descriptors) and
	// the Go runtime, as any client_golang program exports them
	for _, c := range []prometheus.Collector{prommetrics.New(m), newMetricsCollector(stats),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector()} {
		if err := reg.Register(c); err != nil {
			return "", err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "addr", addr, "err", err)
		}
	}()
	log.Info("metrics listening", "addr", l.Addr().String(), "path", "/metrics")
	return l.Addr().String(), nil
}
