package main

import (
	"fmt"
	"strings"
)

// writeShapes writes the shapes' tables: concurrent uploads (aggregate
// and fairness), small files per second, throughput through the delay
// proxy with its own ceiling, and idle connections.
func writeShapes(b *strings.Builder, r *Report, servers []string) {
	if keys := r.keys(kindStreams); len(keys) > 0 {
		b.WriteString("\n### N concurrent pipe uploads of size/N each: aggregate MB/s (ratio to OpenSSH; higher is better)\n\n")
		metricTable(b, r, keys, servers, func(c *Case) float64 { return c.MBPerSec }, "%.0f")
		b.WriteString("\n### Fairness of the concurrent uploads: slowest – fastest stream, MB/s (min/max)\n\n")
		rowTable(b, r, keys, servers, func(c *Case) string {
			if c.StreamMaxMBps == 0 {
				return "–"
			}
			return fmt.Sprintf("%.1f – %.1f (%.2f)", c.StreamMinMBps, c.StreamMaxMBps, c.StreamMinMBps/c.StreamMaxMBps)
		})
	}
	if keys := r.keys(kindSmallPut, kindSmallGet); len(keys) > 0 {
		fmt.Fprintf(b, "\n### Small files over SFTP (%d × %d bytes, `put -r` / `get -r`): files per second (ratio to OpenSSH; higher is better)\n\n",
			r.Settings.SmallFiles, r.Settings.SmallFileSize)
		metricTable(b, r, keys, servers, func(c *Case) float64 { return c.PerSec }, "%.0f")
	}
	if keys := r.keys(kindRTTUp, kindRTTDown); len(keys) > 0 {
		b.WriteString("\n### Through a delay proxy (each direction delayed by RTT/2): MB/s (ratio to OpenSSH; higher is better)\n\n")
		metricTable(b, r, keys, servers, func(c *Case) float64 { return c.MBPerSec }, "%.1f")
		if len(r.ProxyCeilings) > 0 {
			b.WriteString("\nThe proxy alone (TCP in, TCP out, same process as the harness):")
			for _, p := range r.ProxyCeilings {
				fmt.Fprintf(b, " %d ms RTT %.0f MB/s;", p.RTTMillis, p.MBPerSec)
			}
			b.WriteString(" a transfer well below these figures was limited by the SSH endpoints.\n")
		}
	}
	if keys := r.keys(kindIdle); len(keys) > 0 {
		b.WriteString("\n### Idle authenticated connections: server RSS per connection (all its processes), accept latency p50 / p99, connections opened per second (16 at a time)\n\n")
		rowTable(b, r, keys, servers, func(c *Case) string {
			if c.AcceptP50Ms == 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f KiB, %.1f / %.1f ms, %.0f/s", c.RSSPerConnKiB, c.AcceptP50Ms, c.AcceptP99Ms, c.PerSec)
		})
	}
}

// rowTable is metricTable for cells that are text of their own.
func rowTable(b *strings.Builder, r *Report, keys []caseKey, servers []string, cellText func(*Case) string) {
	b.WriteString("| benchmark |")
	for _, s := range servers {
		b.WriteString(" " + s + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(servers)) + "\n")
	for _, k := range keys {
		b.WriteString("| " + keyLabel(k) + " |")
		for _, s := range servers {
			c := r.find(s, k)
			switch {
			case c == nil:
				b.WriteString(" – |")
			case len(c.Samples) == 0 && len(c.Errors) > 0:
				b.WriteString(" failed |")
			default:
				b.WriteString(" " + cellText(c) + " |")
			}
		}
		b.WriteString("\n")
	}
}
