package main

import (
	"errors"
	"maps"
	"strings"
	"time"

	"github.com/offload/offload/internal/proctree"
)

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// cpuMeter measures the CPU time of a server process tree.
type cpuMeter struct {
	procDir string // "/proc"
	pid     int
}

// Seconds returns the CPU seconds used so far by the server and its
// descendants.
func (m cpuMeter) Seconds() (float64, error) {
	t, err := proctree.Read(m.procDir)
	if err != nil {
		return 0, err
	}
	n, err := t.TreeTicks(m.pid)
	return float64(n) / proctree.ClockTicks, err
}

// Children counts the server's live descendants.
func (m cpuMeter) Children() int {
	t, err := proctree.Read(m.procDir)
	if err != nil {
		return 0
	}
	return len(t.Descendants(m.pid))
}

// Settle waits until the server has at most base descendants, so the time
// of finished connections has been reaped into the server's counters.
func (m cpuMeter) Settle(base int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for m.Children() > base {
		if time.Now().After(deadline) {
			return errors.New("bench: server children did not exit in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// sessionTicks returns, for each session program below root, the CPU
// ticks of its subtree: a session program is a process whose parent is
// one of the server's own processes (root, and the descendants with
// root's command name or one starting with "sshd": OpenSSH's sshd and
// sshd-session, offload's sshd-preauth and sshd-user) while it is not one
// itself (the remote cat, the shell, scp -t).
func sessionTicks(t proctree.Table, root int) map[int]uint64 {
	own := func(pid int) bool {
		s, ok := t[pid]
		return ok && (pid == root || s.Comm == t[root].Comm || strings.HasPrefix(s.Comm, "sshd"))
	}
	out := map[int]uint64{}
	for _, pid := range t.Descendants(root) {
		if own(pid) || !own(t[pid].PPID) {
			continue
		}
		out[pid], _ = t.TreeTicks(pid)
	}
	return out
}

// sessionMeter follows the session programs of a server while a transfer
// runs: every sessionPoll it keeps each one's largest subtree ticks, so
// that the time of a program that exits (and is reaped into the server's
// counters) is still known. It misses at most a poll's worth of each.
type sessionMeter struct {
	m    cpuMeter
	base map[int]uint64 // at the start: a program's time before is not the transfer's
	seen map[int]uint64
	stop chan struct{}
	done chan struct{}
}

const sessionPoll = 20 * time.Millisecond

func startSessionMeter(m cpuMeter) *sessionMeter {
	s := &sessionMeter{m: m, seen: map[int]uint64{}, stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	s.base = maps.Clone(s.seen)
	go func() {
		defer close(s.done)
		t := time.NewTicker(sessionPoll)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sessionMeter) sample() {
	t, err := proctree.Read(s.m.procDir)
	if err != nil {
		return
	}
	for pid, n := range sessionTicks(t, s.m.pid) {
		s.seen[pid] = max(s.seen[pid], n)
	}
}

// Seconds stops the meter and returns the session programs' CPU seconds.
func (s *sessionMeter) Seconds() float64 {
	close(s.stop)
	<-s.done
	s.sample()
	var n uint64
	for pid, v := range s.seen {
		n += v - s.base[pid]
	}
	return float64(n) / proctree.ClockTicks
}
