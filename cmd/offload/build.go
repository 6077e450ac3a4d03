package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
)

// buildInfo describes this binary and machine, like openssl speed's
// "options:" and "compiler:" lines.
type buildInfo struct {
	Offload     string
	Go          string
	GOOS        string
	GOARCH      string
	GOAMD64     string `json:",omitempty"`
	CGO         bool
	CPU         string
	CPUFeatures []string
}

func currentBuild(f cpu.Features) buildInfo {
	b := buildInfo{Offload: Version, Go: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		CPU: provider.CPUModel(), CPUFeatures: f.List()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "GOAMD64":
				b.GOAMD64 = s.Value
			case "CGO_ENABLED":
				b.CGO = s.Value == "1"
			}
		}
	}
	if b.GOARCH == "amd64" && b.GOAMD64 == "" {
		b.GOAMD64 = "v1"
	}
	return b
}

func (b buildInfo) lines() []string {
	cgo := "off"
	if b.CGO {
		cgo = "on"
	}
	arch := b.GOOS + "/" + b.GOARCH
	if b.GOAMD64 != "" {
		arch += " GOAMD64=" + b.GOAMD64
	}
	feats := strings.Join(b.CPUFeatures, " ")
	if feats == "" {
		feats = "(none)"
	}
	return []string{
		"offload " + b.Offload,
		fmt.Sprintf("built with %s for %s, cgo %s", b.Go, arch, cgo),
		"cpu: " + b.CPU,
		"cpu features: " + feats,
	}
}

func buildLines() []string { return currentBuild(cpu.Detect()).lines() }
