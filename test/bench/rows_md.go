package main

import (
	"fmt"
	"strings"
)

// writeRows writes the compression and library-client tables: MB/s,
// server CPU per GiB (whole and its own processes), client CPU per GiB,
// and per server the compression factor or the negotiated cipher.
func writeRows(b *strings.Builder, r *Report, servers []string) {
	if keys := r.keys(compressKinds...); len(keys) > 0 {
		b.WriteString("\n### Compression: pipe transfers with `ssh -o Compression=yes` (zlib@openssh.com, checked in ssh -v's output)\n\n")
		if r.TextCorpus != "" {
			fmt.Fprintf(b, "text: %s; random: the incompressible payload of the other rows. Upload into `wc -c` (count checked), download from `cat` (bytes counted).\n", r.TextCorpus)
		}
		rowMetrics(b, r, keys, servers, "OpenSSH client")
		b.WriteString("\n#### Compressed size / payload size in the payload's direction (ssh -v's exit statistics)\n\n")
		rowTable(b, r, keys, servers, func(c *Case) string {
			if c.CompressFactor == 0 {
				return "–"
			}
			return fmt.Sprintf("%.3f", c.CompressFactor)
		})
	}
	if keys := r.keys(libKinds...); len(keys) > 0 {
		b.WriteString("\n### Library clients on their default algorithms (golang.org/x/crypto/ssh with github.com/pkg/sftp; paramiko)\n\n")
		b.WriteString("No cipher forced; the servers offer their configured list. The time is the client's, from the transfer's first byte to its last (after login); server and client CPU cover the whole connection.\n")
		rowMetrics(b, r, keys, servers, "library client")
		b.WriteString("\n#### Cipher negotiated (client to server / server to client when they differ)\n\n")
		rowTable(b, r, keys, servers, func(c *Case) string {
			if c.Negotiated == "" {
				return "–"
			}
			return c.Negotiated
		})
	}
}

// rowMetrics writes the four per-transfer tables of keys.
func rowMetrics(b *strings.Builder, r *Report, keys []caseKey, servers []string, client string) {
	b.WriteString("\n#### MB/s of payload (ratio to OpenSSH; higher is better)\n\n")
	metricTable(b, r, keys, servers, func(c *Case) float64 { return c.MBPerSec }, "%.0f")
	b.WriteString("\n#### Server CPU seconds per GiB (ratio to OpenSSH; lower is better)\n\n")
	metricTable(b, r, keys, servers, func(c *Case) float64 { return c.CPUPerGiB }, "%.2f")
	b.WriteString("\n#### Server's own CPU seconds per GiB, without the session programs (ratio to OpenSSH; lower is better)\n\n")
	metricTable(b, r, keys, servers, func(c *Case) float64 { return c.OwnPerGiB }, "%.2f")
	fmt.Fprintf(b, "\n#### %s CPU seconds per GiB (ratio to the client against OpenSSH; lower is better)\n\n", client)
	metricTable(b, r, keys, servers, func(c *Case) float64 { return c.ClientPerGiB }, "%.2f")
}
