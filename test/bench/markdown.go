package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// baseline is the server every ratio is taken against.
const baseline = "openssh"

// writeJSON writes the report, indented.
func writeJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("bench: json: %w", err)
	}
	return nil
}

// writeMarkdown writes the tables: throughput and server CPU per GiB for
// every transfer, the provider table, ssh-true latency and handshakes per
// second, each with ratios to OpenSSH.
func writeMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	writeHeader(&b, r)
	servers := r.serverNames()
	keys := r.keys(transferKinds...)
	if len(keys) > 0 {
		b.WriteString("\n### Throughput (MB/s, ratio to OpenSSH; higher is better)\n\n")
		metricTable(&b, r, keys, servers, func(c *Case) float64 { return c.MBPerSec }, "%.0f")
		b.WriteString("\n### Server CPU seconds per GiB moved (ratio to OpenSSH; lower is better)\n\n")
		metricTable(&b, r, keys, servers, func(c *Case) float64 { return c.CPUPerGiB }, "%.2f")
		b.WriteString("\n### Server's own CPU seconds per GiB: its processes without the session programs (remote cat, shell, scp -t) (ratio to OpenSSH; lower is better)\n\n")
		metricTable(&b, r, keys, servers, func(c *Case) float64 { return c.OwnPerGiB }, "%.2f")
		b.WriteString("\n### OpenSSH client CPU seconds per GiB moved (ratio to the client against OpenSSH; lower is better)\n\n")
		metricTable(&b, r, keys, servers, func(c *Case) float64 { return c.ClientPerGiB }, "%.2f")
		providerTable(&b, r, servers)
	}
	if keys := r.keys(kindLatency); len(keys) > 0 {
		b.WriteString("\n### `ssh host true` (milliseconds, ratio to OpenSSH; lower is better)\n\n")
		metricTable(&b, r, keys, servers, func(c *Case) float64 { return c.Millis }, "%.1f")
	}
	if keys := r.keys(kindHandshake); len(keys) > 0 {
		b.WriteString("\n### Handshakes per second by concurrent clients (ratio to OpenSSH; higher is better)\n\n")
		metricTable(&b, r, keys, servers, func(c *Case) float64 { return c.PerSec }, "%.1f")
	}
	writeRows(&b, r, servers)
	writeShapes(&b, r, servers)
	writeErrors(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeHeader(b *strings.Builder, r *Report) {
	m, s := r.Machine, r.Settings
	fmt.Fprintf(b, "## offload sshd vs OpenSSH sshd (%s)\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(b, "- command: `%s`\n", s.Command)
	fmt.Fprintf(b, "- machine: %d CPUs, %s (%s), %s\n", m.NProc, m.CPUModel, strings.Join(m.CPUFlags, " "), m.Kernel)
	fmt.Fprintf(b, "- load average before: %.2f %.2f %.2f, after: %.2f %.2f %.2f\n",
		m.LoadBefore[0], m.LoadBefore[1], m.LoadBefore[2], m.LoadAfter[0], m.LoadAfter[1], m.LoadAfter[2])
	fmt.Fprintf(b, "- %s; %s; offload %s\n", m.GoVersion, m.OpenSSH, m.Offload)
	fmt.Fprintf(b, "- medians of %d rounds, servers alternated round by round; payload %s; address %s\n",
		s.Rounds, formatSize(s.Size), s.Addr)
	if s.CPUSplit != "" {
		fmt.Fprintf(b, "- CPU split: %s\n", s.CPUSplit)
	}
	b.WriteString("- servers:\n")
	for _, sv := range r.Servers {
		fmt.Fprintf(b, "  - `%s`: %s\n", sv.Name, sv.Desc)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "- note: %s\n", n)
	}
}

// keyLabel names a benchmark in the first column.
func keyLabel(k caseKey) string {
	switch {
	case k.RTTMillis > 0:
		return fmt.Sprintf("%s %s, %d ms RTT", k.Kind, k.Cipher, k.RTTMillis)
	case k.Clients > 0 && k.Cipher != "":
		return fmt.Sprintf("%s %s, %d clients", k.Kind, k.Cipher, k.Clients)
	case k.Clients > 0:
		return fmt.Sprintf("%s, %d clients", k.Kind, k.Clients)
	case k.Cipher != "":
		return fmt.Sprintf("%s %s", k.Kind, k.Cipher)
	}
	return k.Kind
}

// metricTable writes one row per benchmark and one column per server; each
// cell is the median and, off the baseline, its ratio to the baseline.
func metricTable(b *strings.Builder, r *Report, keys []caseKey, servers []string, v func(*Case) float64, format string) {
	b.WriteString("| benchmark |")
	for _, s := range servers {
		b.WriteString(" " + s + " |")
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---:|", len(servers)))
	b.WriteString("\n")
	for _, k := range keys {
		b.WriteString("| " + keyLabel(k) + " |")
		base := caseValue(r.find(baseline, k), v)
		for _, s := range servers {
			b.WriteString(" " + cell(r.find(s, k), v, format, base, s == baseline) + " |")
		}
		b.WriteString("\n")
	}
}

// caseValue is v(c), or NaN for a missing case or a zero value.
func caseValue(c *Case, v func(*Case) float64) float64 {
	if c == nil || v(c) == 0 {
		return math.NaN()
	}
	return v(c)
}

func cell(c *Case, v func(*Case) float64, format string, base float64, isBase bool) string {
	if c == nil {
		return "–"
	}
	x := caseValue(c, v)
	if math.IsNaN(x) {
		if len(c.Errors) > 0 {
			return "failed"
		}
		return "–"
	}
	s := fmt.Sprintf(format, x)
	if rt := ratio(x, base); !isBase && !math.IsNaN(rt) {
		s += fmt.Sprintf(" (%.2fx)", rt)
	}
	return s
}

// providerTable is the modern replay of the T2 scp table: one upload of
// the payload with the transfer cipher per server, time and CPU.
func providerTable(b *strings.Builder, r *Report, servers []string) {
	k := caseKey{Kind: kindSCPUp, Cipher: r.Settings.XferCipher}
	base := r.find(baseline, k)
	if base == nil {
		return
	}
	fmt.Fprintf(b, "\n### scp upload of %s with %s by provider (time and server CPU, ratio to OpenSSH)\n\n",
		formatSize(r.Settings.Size), k.Cipher)
	b.WriteString("| server | seconds | server CPU s | CPU % of wall | time ratio | CPU ratio |\n|---|---:|---:|---:|---:|---:|\n")
	bs, bc := timeAndCPU(base)
	for _, s := range servers {
		c := r.find(s, k)
		if c == nil {
			continue
		}
		if len(c.Samples) == 0 {
			fmt.Fprintf(b, "| %s | failed | | | | |\n", s)
			continue
		}
		sec, cpu := timeAndCPU(c)
		fmt.Fprintf(b, "| %s | %.2f | %.2f | %.0f | %s | %s |\n", s, sec, cpu, c.ServerCPUPct,
			fmtRatio(ratio(sec, bs)), fmtRatio(ratio(cpu, bc)))
	}
}

// timeAndCPU are the medians of wall and CPU seconds of c's samples.
func timeAndCPU(c *Case) (float64, float64) {
	var sec, cpu []float64
	for _, s := range c.Samples {
		sec = append(sec, s.Seconds)
		cpu = append(cpu, s.CPUSeconds)
	}
	return median(sec), median(cpu)
}

func fmtRatio(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2fx", x)
}

// writeErrors lists the first error of every failed case (all of them
// are in the JSON).
func writeErrors(b *strings.Builder, r *Report) {
	first := true
	for _, c := range r.Cases {
		if len(c.Errors) == 0 {
			continue
		}
		if first {
			b.WriteString("\n### Errors\n\n")
			first = false
		}
		more := ""
		if n := len(c.Errors); n > 1 {
			more = fmt.Sprintf(" (and %d more)", n-1)
		}
		fmt.Fprintf(b, "- %s on %s: %s%s\n", keyLabel(c.key()), c.Server, c.Errors[0], more)
	}
}
