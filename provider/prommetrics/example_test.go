package prommetrics_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/provider/prommetrics"
	"github.com/offload/offload/providers/software"
)

// A registry with metrics, exported to a Prometheus registry: one seal of
// five bytes and one failed open.
func Example() {
	m := provider.NewMetrics()
	reg := provider.New(provider.Config{Metrics: m})
	defer reg.Close()
	reg.Register(software.New())

	prom := prometheus.NewRegistry()
	prom.MustRegister(prommetrics.New(m))

	a, _ := reg.AEAD("chacha20-poly1305", make([]byte, 32))
	ct := a.Seal(nil, make([]byte, 12), []byte("hello"), nil)
	ct[0] ^= 1
	a.Open(nil, make([]byte, 12), ct, nil)

	families, _ := prom.Gather()
	var lines []string
	for _, f := range families {
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			lines = append(lines, fmt.Sprintf("%s{%s} %v", f.GetName(), strings.Join(labels, ","), s.GetCounter().GetValue()))
		}
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// offload_provider_bytes_total{algorithm=chacha20-poly1305,op=open,provider=software} 21
	// offload_provider_bytes_total{algorithm=chacha20-poly1305,op=seal,provider=software} 5
	// offload_provider_errors_total{algorithm=chacha20-poly1305,op=open,provider=software} 1
	// offload_provider_errors_total{algorithm=chacha20-poly1305,op=seal,provider=software} 0
	// offload_provider_operations_total{algorithm=chacha20-poly1305,op=open,provider=software} 1
	// offload_provider_operations_total{algorithm=chacha20-poly1305,op=seal,provider=software} 1
}
