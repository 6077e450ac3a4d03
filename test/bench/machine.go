package main

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// cryptoFlags are the /proc/cpuinfo flags that decide crypto speed.
var cryptoFlags = []string{"aes", "pclmulqdq", "vaes", "vpclmulqdq", "avx2", "avx512f", "sha_ni"}

// describeMachine records CPU, kernel, load and tool versions.
func describeMachine(ctx context.Context, t *tools, offload string) Machine {
	m := Machine{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel, m.CPUFlags = parseCPUInfo(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if out, err := exec.CommandContext(ctx, t.SSH, "-V").CombinedOutput(); err == nil {
		m.OpenSSH = strings.TrimSpace(string(out))
	}
	if offload == "" {
		m.Offload = "(not run)"
	} else if out, err := exec.CommandContext(ctx, offload, "version").CombinedOutput(); err == nil {
		m.Offload = strings.Join(strings.Fields(string(out)), " ")
	}
	return m
}

// parseCPUInfo returns the first model name and the crypto flags present.
func parseCPUInfo(s string) (model string, flags []string) {
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		case "flags", "Features":
			if flags == nil {
				have := strings.Fields(v)
				flags = []string{}
				for _, f := range cryptoFlags {
					if slices.Contains(have, f) {
						flags = append(flags, f)
					}
				}
			}
		}
	}
	return model, flags
}

// loadAverage reads the 1, 5 and 15 minute load averages.
func loadAverage() [3]float64 {
	var out [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return out
	}
	return parseLoadAvg(string(b))
}

func parseLoadAvg(s string) [3]float64 {
	var out [3]float64
	f := strings.Fields(s)
	for i := 0; i < 3 && i < len(f); i++ {
		out[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return out
}
