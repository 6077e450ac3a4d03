package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The CPU split (-server-cpus, -client-cpus) keeps the load generator off
// the servers' CPUs, the way a load test on two machines would. Without it
// the in-process x/crypto client of the handshake benchmark and the ssh,
// sftp and scp clients of the transfers take their CPU from the same cores
// as the server they measure, so a server that needs little CPU per login
// is capped by what its client needs. The servers are started while the
// harness runs on the server CPUs (a child inherits the affinity of the
// thread that forks it, and so do the server's own children); the harness
// then moves to the client CPUs for the measurements, and the clients it
// starts inherit those.

// cpuSplit is the parsed pair of CPU lists; the zero value pins nothing.
type cpuSplit struct {
	server, client []int
}

// parseCPUSplit checks both lists: given together, disjoint, and naming
// CPUs this process may run on.
func parseCPUSplit(server, client string) (cpuSplit, error) {
	if server == "" && client == "" {
		return cpuSplit{}, nil
	}
	if server == "" || client == "" {
		return cpuSplit{}, fmt.Errorf("bench: -server-cpus and -client-cpus go together")
	}
	var s cpuSplit
	var err error
	if s.server, err = parseCPUList(server); err != nil {
		return cpuSplit{}, fmt.Errorf("bench: -server-cpus: %w", err)
	}
	if s.client, err = parseCPUList(client); err != nil {
		return cpuSplit{}, fmt.Errorf("bench: -client-cpus: %w", err)
	}
	for _, c := range s.client {
		if slices.Contains(s.server, c) {
			return cpuSplit{}, fmt.Errorf("bench: CPU %d is in both -server-cpus and -client-cpus", c)
		}
	}
	return s, nil
}

// parseCPUList reads "0", "0,2" or "0-3,6" and checks each CPU is one this
// process is allowed to use.
func parseCPUList(s string) ([]int, error) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, err
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, err := parseCPURange(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		for c := lo; c <= hi; c++ {
			if !allowed.IsSet(c) {
				return nil, fmt.Errorf("CPU %d is not available here (%d CPUs)", c, runtime.NumCPU())
			}
			if !slices.Contains(cpus, c) {
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

func parseCPURange(part string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(part, "-")
	if lo, err = strconv.Atoi(a); err != nil || lo < 0 {
		return 0, 0, fmt.Errorf("%q is not a CPU number or range", part)
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil || hi < lo || hi >= 1024 {
			return 0, 0, fmt.Errorf("%q is not a CPU range", part)
		}
	}
	return lo, hi, nil
}

// enabled reports whether the split was asked for.
func (s cpuSplit) enabled() bool { return len(s.server) > 0 }

// pinServers moves the harness onto the server CPUs, for starting them.
func (s cpuSplit) pinServers() error {
	if !s.enabled() {
		return nil
	}
	return pinSelf(s.server)
}

// pinClients moves the harness onto the client CPUs, for measuring.
func (s cpuSplit) pinClients() error {
	if !s.enabled() {
		return nil
	}
	return pinSelf(s.client)
}

// pinSelf sets the affinity of every thread of this process. Threads the
// runtime starts later inherit it from the thread that starts them; the
// second pass catches any started during the first.
func pinSelf(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("bench: pin: %w", err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("bench: pin thread %d to CPUs %v: %w", tid, cpus, err)
			}
		}
	}
	return nil
}

// describe is the split as the report prints it.
func (s cpuSplit) describe() string {
	if !s.enabled() {
		return ""
	}
	return fmt.Sprintf("servers on CPUs %s; the harness and its clients on CPUs %s", joinInts(s.server), joinInts(s.client))
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
