package main

import (
	"fmt"
	"strings"
)

// task is one benchmark and the servers it runs on.
type task struct {
	Kind    string
	Cipher  string
	Clients int
	// RTTMillis is the round-trip time of the delay proxy (rtt shapes).
	RTTMillis int
	Servers   []string
}

// groups maps the -only words to benchmark kinds.
var groups = map[string][]string{
	"pipe":       {kindPipeUp, kindPipeDown},
	"sftp":       {kindSFTPGet, kindSFTPPut},
	"scp":        {kindSCPUp, kindSCPDown, kindSCPOUp, kindSCPODown},
	"latency":    {kindLatency},
	"handshakes": {kindHandshake},
	// Only when named, not part of all: compression and library clients.
	"compress":   compressKinds,
	"libclients": libKinds,
}

// groupOrder is the order of -only's default, "all".
var groupOrder = []string{"pipe", "sftp", "scp", "latency", "handshakes"}

// extraOrder are the groups that run only when named.
var extraOrder = []string{"compress", "libclients"}

// parseOnly turns "pipe,sftp" (or "all") into the set of kinds to run.
func parseOnly(s string) (map[string]bool, error) {
	out := map[string]bool{}
	var words []string
	for _, w := range strings.Split(s, ",") {
		switch w = strings.TrimSpace(w); w {
		case "all":
			words = append(append(words, groupOrder...), shapeOrder...)
		case "shapes":
			words = append(words, shapeOrder...)
		default:
			words = append(words, w)
		}
	}
	for _, w := range words {
		kinds, ok := groups[w]
		if !ok {
			kinds, ok = shapeGroups[w]
		}
		if !ok {
			return nil, fmt.Errorf("bench: -only %q: want all, shapes or a comma list of %s", w,
				strings.Join(append(append(append([]string{}, groupOrder...), shapeOrder...), extraOrder...), ", "))
		}
		for _, k := range kinds {
			out[k] = true
		}
	}
	return out, nil
}

// makePlan lists the tasks of one round in a fixed order: pipes per
// cipher, sftp, scp, compression, library clients, latency, then
// handshakes per client count.
func makePlan(s Settings, specs []serverSpec, kinds map[string]bool) []task {
	var out []task
	add := func(kind, cipher string, clients int, on func(serverSpec) bool) {
		if !kinds[kind] {
			return
		}
		t := task{Kind: kind, Cipher: cipher, Clients: clients}
		for _, sp := range specs {
			if on(sp) {
				t.Servers = append(t.Servers, sp.Name)
			}
		}
		if len(t.Servers) > 0 {
			out = append(out, t)
		}
	}
	for _, c := range s.Ciphers {
		for _, k := range groups["pipe"] {
			add(k, c, 0, func(sp serverSpec) bool { return sp.Pipe(c) })
		}
	}
	for _, k := range append(groups["sftp"], groups["scp"]...) {
		add(k, s.XferCipher, 0, func(sp serverSpec) bool { return sp.Files && sp.Pipe(s.XferCipher) })
	}
	for _, k := range compressKinds {
		add(k, s.XferCipher, 0, func(sp serverSpec) bool { return sp.Sessions && sp.Pipe(s.XferCipher) })
	}
	for _, k := range libKinds {
		add(k, "", 0, func(sp serverSpec) bool { return sp.Sessions })
	}
	add(kindLatency, "", 0, func(sp serverSpec) bool { return sp.Sessions })
	for _, n := range s.Clients {
		add(kindHandshake, "", n, func(sp serverSpec) bool { return sp.Sessions })
	}
	return append(out, shapeTasks(s, specs, kinds)...)
}

// rotate returns xs started at index round mod len: round 0 runs the
// servers in order, round 1 starts with the second, and so on, so no
// server always goes first after the others warmed the caches.
func rotate(xs []string, round int) []string {
	if len(xs) == 0 {
		return nil
	}
	r := round % len(xs)
	return append(append([]string{}, xs[r:]...), xs[:r]...)
}
