package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of the times in /proc/PID/stat. Linux
// has exported 100 to user space on every architecture for decades.
const clockTicks = 100

// procStat is the part of /proc/PID/stat the harness needs.
type procStat struct {
	PID    int
	Comm   string // the command name, without its parentheses
	PPID   int
	State  byte
	UTime  uint64 // ticks in user mode
	STime  uint64 // ticks in kernel mode
	CUTime uint64 // user ticks of waited-for children
	CSTime uint64 // kernel ticks of waited-for children
}

// Ticks is the CPU time of the process and of its reaped descendants.
func (s procStat) Ticks() uint64 { return s.UTime + s.STime + s.CUTime + s.CSTime }

// parseProcStat parses one /proc/PID/stat line. The command name is in
// parentheses and may itself hold blanks and parentheses, so the fields
// are counted from the last ')'.
func parseProcStat(line string) (procStat, error) {
	var s procStat
	open := strings.IndexByte(line, '(')
	end := strings.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return s, fmt.Errorf("bench: /proc stat: no command name in %q", truncate(line, 60))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return s, fmt.Errorf("bench: /proc stat: pid: %w", err)
	}
	s.PID, s.Comm = pid, line[open+1:end]
	// Fields after the name, numbered from 3 as in proc(5): state(3)
	// ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
	f := strings.Fields(line[end+1:])
	if len(f) < 15 {
		return s, fmt.Errorf("bench: /proc stat: %d fields after the name, want at least 15", len(f))
	}
	if len(f[0]) != 1 {
		return s, fmt.Errorf("bench: /proc stat: bad state %q", f[0])
	}
	s.State = f[0][0]
	if s.PPID, err = strconv.Atoi(f[1]); err != nil {
		return s, fmt.Errorf("bench: /proc stat: ppid: %w", err)
	}
	vals := make([]uint64, 4)
	for i := range vals {
		// cutime and cstime are signed in proc(5); they are never
		// negative in practice, and a negative one is an error here.
		if vals[i], err = strconv.ParseUint(f[11+i], 10, 64); err != nil {
			return s, fmt.Errorf("bench: /proc stat: field %d: %w", 14+i, err)
		}
	}
	s.UTime, s.STime, s.CUTime, s.CSTime = vals[0], vals[1], vals[2], vals[3]
	return s, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// procTable is every process's stat, read from a /proc-like directory.
type procTable map[int]procStat

// readProcTable reads dir/*/stat for every numeric entry. Processes that
// exit while it reads are skipped.
func readProcTable(dir string) (procTable, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	t := procTable{}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		s, err := parseProcStat(string(b))
		if err != nil {
			continue
		}
		t[s.PID] = s
	}
	return t, nil
}

// descendants lists the processes below root (not root itself).
func (t procTable) descendants(root int) []int {
	kids := map[int][]int{}
	for pid, s := range t {
		kids[s.PPID] = append(kids[s.PPID], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range kids[p] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

// treeTicks sums the CPU ticks of root and every live descendant. Each
// process counts itself and the children it has reaped, so a process that
// exits moves its time into its parent's cutime/cstime and the sum stays
// consistent.
func (t procTable) treeTicks(root int) (uint64, error) {
	s, ok := t[root]
	if !ok {
		return 0, fmt.Errorf("bench: process %d is gone", root)
	}
	sum := s.Ticks()
	for _, d := range t.descendants(root) {
		sum += t[d].Ticks()
	}
	return sum, nil
}

// cpuMeter measures the CPU time of a server process tree.
type cpuMeter struct {
	procDir string // "/proc"
	pid     int
}

// Seconds returns the CPU seconds used so far by the server and its
// descendants.
func (m cpuMeter) Seconds() (float64, error) {
	t, err := readProcTable(m.procDir)
	if err != nil {
		return 0, err
	}
	n, err := t.treeTicks(m.pid)
	return float64(n) / clockTicks, err
}

// Children counts the server's live descendants.
func (m cpuMeter) Children() int {
	t, err := readProcTable(m.procDir)
	if err != nil {
		return 0
	}
	return len(t.descendants(m.pid))
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
func (t procTable) sessionTicks(root int) map[int]uint64 {
	own := func(pid int) bool {
		s, ok := t[pid]
		return ok && (pid == root || s.Comm == t[root].Comm || strings.HasPrefix(s.Comm, "sshd"))
	}
	out := map[int]uint64{}
	for _, pid := range t.descendants(root) {
		if own(pid) || !own(t[pid].PPID) {
			continue
		}
		n := t[pid].Ticks()
		for _, d := range t.descendants(pid) {
			n += t[d].Ticks()
		}
		out[pid] = n
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
	t, err := readProcTable(s.m.procDir)
	if err != nil {
		return
	}
	for pid, n := range t.sessionTicks(s.m.pid) {
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
	return float64(n) / clockTicks
}
