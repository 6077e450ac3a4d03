package main

import (
	"math"
	"time"
)

// Benchmark kinds.
const (
	kindPipeUp    = "pipe-upload"
	kindPipeDown  = "pipe-download"
	kindSFTPGet   = "sftp-get"
	kindSFTPPut   = "sftp-put"
	kindSCPUp     = "scp-upload"
	kindSCPDown   = "scp-download"
	kindSCPOUp    = "scp-O-upload"
	kindSCPODown  = "scp-O-download"
	kindLatency   = "ssh-true"
	kindHandshake = "handshakes"
)

// transferKinds are the kinds that move the payload, in table order.
var transferKinds = []string{kindPipeUp, kindPipeDown, kindSFTPGet, kindSFTPPut,
	kindSCPUp, kindSCPDown, kindSCPOUp, kindSCPODown}

func isTransfer(kind string) bool {
	for _, k := range transferKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// Sample is one timed run against one server.
type Sample struct {
	Seconds    float64 // wall-clock time
	CPUSeconds float64 `json:",omitempty"` // server process tree CPU time
	// SessionCPUSeconds is the part of CPUSeconds the session programs
	// took (the remote cat, shell, scp -t; sessionMeter), not the server.
	SessionCPUSeconds float64 `json:",omitempty"`
	// ClientCPUSeconds is the OpenSSH client's CPU time (with the ssh that
	// scp and sftp run): when it is near Seconds, the client was the limit.
	ClientCPUSeconds float64 `json:",omitempty"`
	Bytes            int64   `json:",omitempty"` // payload moved
	Count            int     `json:",omitempty"` // handshakes done, files moved, connections held
	// StreamMinMBps and StreamMaxMBps are the slowest and fastest stream
	// of a concurrent run.
	StreamMinMBps float64 `json:",omitempty"`
	StreamMaxMBps float64 `json:",omitempty"`
	// RSSPerConnKiB is the growth of the server's resident memory (all
	// its processes) per idle connection; AcceptP50Ms and AcceptP99Ms are
	// the connections' times from dial to authenticated.
	RSSPerConnKiB float64 `json:",omitempty"`
	AcceptP50Ms   float64 `json:",omitempty"`
	AcceptP99Ms   float64 `json:",omitempty"`
	// CompressFactor is compressed/raw bytes of the payload's direction
	// (compression rows, from ssh -v).
	CompressFactor float64 `json:",omitempty"`
	// Negotiated is the cipher a library client negotiated: one name, or
	// "client-to-server / server-to-client" when they differ.
	Negotiated string `json:",omitempty"`
}

// Case is one benchmark on one server, with every round's sample.
type Case struct {
	Kind    string
	Cipher  string `json:",omitempty"`
	Clients int    `json:",omitempty"` // concurrent clients (handshakes, streams, idle connections)
	// RTTMillis is the emulated round-trip time (rtt shapes).
	RTTMillis int `json:",omitempty"`
	Server    string
	Samples   []Sample
	Errors    []string `json:",omitempty"`

	// Medians, filled by summarize.
	MBPerSec     float64 `json:",omitempty"` // transfers: 1e6 bytes per second
	CPUPerGiB    float64 `json:",omitempty"` // transfers: server CPU seconds per GiB
	OwnPerGiB    float64 `json:",omitempty"` // transfers: the same without the session programs
	ClientPerGiB float64 `json:",omitempty"` // transfers: client CPU seconds per GiB
	Millis       float64 `json:",omitempty"` // ssh-true: milliseconds per command
	PerSec       float64 `json:",omitempty"` // handshakes per second
	ServerCPUPct float64 `json:",omitempty"` // server CPU time / wall time, percent
	// Shapes (shapes.go): medians of the samples' fields of that name.
	StreamMinMBps, StreamMaxMBps            float64 `json:",omitempty"`
	RSSPerConnKiB, AcceptP50Ms, AcceptP99Ms float64 `json:",omitempty"`
	// CompressFactor is the median of the samples'; Negotiated lists
	// their distinct ciphers.
	CompressFactor float64 `json:",omitempty"`
	Negotiated     string  `json:",omitempty"`
}

// key identifies a benchmark independent of the server.
func (c *Case) key() caseKey { return caseKey{c.Kind, c.Cipher, c.Clients, c.RTTMillis} }

type caseKey struct {
	Kind      string
	Cipher    string
	Clients   int
	RTTMillis int
}

// summarize fills the medians from the samples.
func (c *Case) summarize() {
	var mbps, cpu, own, ccpu, ms, per, pct []float64
	for _, s := range c.Samples {
		if s.Seconds <= 0 {
			continue
		}
		pct = append(pct, 100*s.CPUSeconds/s.Seconds)
		switch {
		case s.Bytes > 0:
			mbps = append(mbps, float64(s.Bytes)/s.Seconds/1e6)
			cpu = append(cpu, s.CPUSeconds/(float64(s.Bytes)/(1<<30)))
			own = append(own, (s.CPUSeconds-s.SessionCPUSeconds)/(float64(s.Bytes)/(1<<30)))
			ccpu = append(ccpu, s.ClientCPUSeconds/(float64(s.Bytes)/(1<<30)))
		case s.Count > 0:
			per = append(per, float64(s.Count)/s.Seconds)
		default:
			ms = append(ms, s.Seconds*1000)
		}
	}
	c.MBPerSec, c.CPUPerGiB, c.ClientPerGiB = nz(median(mbps)), nz(median(cpu)), nz(median(ccpu))
	c.OwnPerGiB = nz(median(own))
	c.Millis, c.PerSec, c.ServerCPUPct = nz(median(ms)), nz(median(per)), nz(median(pct))
	c.summarizeShapes()
	c.summarizeRows()
}

// nz turns NaN into 0, which JSON can carry and omitempty drops.
func nz(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// Machine describes where the figures were taken.
type Machine struct {
	NProc      int
	CPUModel   string
	CPUFlags   []string // the crypto-relevant ones
	Kernel     string
	LoadBefore [3]float64
	LoadAfter  [3]float64
	GoVersion  string
	OpenSSH    string
	Offload    string
}

// ServerInfo says how one server under test was configured.
type ServerInfo struct {
	Name    string
	Desc    string
	Command []string
	Config  string
}

// Settings are the options of the run, echoed into the report.
type Settings struct {
	Command     string
	Rounds      int
	Size        int64
	Addr        string
	Ciphers     []string
	XferCipher  string
	Clients     []int
	Handshakes  int
	LatencyRuns int
	CPUSplit    string `json:",omitempty"` // -server-cpus and -client-cpus, when given
	// The shapes' settings (shapes.go).
	Streams       []int
	SmallFiles    int
	SmallFileSize int
	RTTMillis     []int
	RTTSize       int64
	Idle          []int
}

// Report is the whole result, written as JSON and Markdown.
type Report struct {
	Started  time.Time
	Finished time.Time
	Machine  Machine
	Settings Settings
	Servers  []ServerInfo
	Cases    []*Case
	Notes    []string `json:",omitempty"`
	// ProxyCeilings are the delay proxy's own rates (rtt shapes).
	ProxyCeilings []ProxyCeiling `json:",omitempty"`
	// TextCorpus says what the compression rows' text payload is.
	TextCorpus string `json:",omitempty"`
}

// find returns the case of server for key k, or nil.
func (r *Report) find(server string, k caseKey) *Case {
	for _, c := range r.Cases {
		if c.Server == server && c.key() == k {
			return c
		}
	}
	return nil
}

// keys lists the distinct benchmarks of the given kinds in first-seen order.
func (r *Report) keys(kinds ...string) []caseKey {
	want := map[string]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var out []caseKey
	seen := map[caseKey]bool{}
	for _, kind := range kinds {
		for _, c := range r.Cases {
			if c.Kind == kind && want[c.Kind] && !seen[c.key()] {
				seen[c.key()] = true
				out = append(out, c.key())
			}
		}
	}
	return out
}

// serverNames lists the servers in the report's order.
func (r *Report) serverNames() []string {
	out := make([]string, len(r.Servers))
	for i, s := range r.Servers {
		out[i] = s.Name
	}
	return out
}
