// Package proctree reads Linux process trees from /proc: which processes
// are below a given one, and the CPU time the tree has used.
//
// The benchmark harness uses it to charge a server for its own processes
// (and to tell them from the session programs they run); the interop
// harness uses it to see whether a client's processes still make
// progress.
//
// # Reading
//
// [Read] takes one snapshot of every process's stat file. Processes that
// exit while it reads are left out, so a snapshot is a consistent view of
// the tree only up to that race: callers compare snapshots, not single
// reads.
//
// # Finding processes
//
// [Find] lists the processes whose argument vector a predicate accepts:
// how a test finds the programs a server started for it.
//
// # CPU time
//
// Times are in clock ticks of [ClockTicks] per second, as the kernel
// exports them. [Stat.Ticks] counts a process and the children it has
// reaped, so the sum over a tree ([Table.TreeTicks]) does not drop when a
// child exits and its time moves into its parent's counters.
package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// ClockTicks is USER_HZ, the unit of the times in /proc/PID/stat: Linux
// exports 100 to user space on every architecture.
const ClockTicks = 100

// Stat is the part of /proc/PID/stat this package reads.
type Stat struct {
	PID    int
	Comm   string // the command name, without its parentheses
	PPID   int
	State  byte   // 'R', 'S', 'Z', ...
	UTime  uint64 // ticks in user mode
	STime  uint64 // ticks in kernel mode
	CUTime uint64 // user ticks of reaped children
	CSTime uint64 // kernel ticks of reaped children
}

// Ticks is the CPU time of the process and of the children it reaped.
func (s Stat) Ticks() uint64 { return s.UTime + s.STime + s.CUTime + s.CSTime }

// ErrSyntax is wrapped by every error of [ParseStat].
var ErrSyntax = errors.New("proctree: malformed stat line")

// ParseStat parses one /proc/PID/stat line. The command name is in
// parentheses and may itself hold blanks and parentheses, so the fields
// are counted from the last ')'.
func ParseStat(line []byte) (Stat, error) {
	var s Stat
	open := bytes.IndexByte(line, '(')
	end := bytes.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return s, fmt.Errorf("%w: no command name", ErrSyntax)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line[:open])))
	if err != nil || pid <= 0 {
		return s, fmt.Errorf("%w: pid %q", ErrSyntax, truncate(line[:open], 20))
	}
	s.PID, s.Comm = pid, string(line[open+1:end])
	return s, s.parseFields(bytes.Fields(line[end+1:]))
}

// parseFields reads the fields after the name, numbered from 3 as in
// proc(5): state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
func (s *Stat) parseFields(f [][]byte) error {
	if len(f) < 15 {
		return fmt.Errorf("%w: %d fields after the name, want at least 15", ErrSyntax, len(f))
	}
	if len(f[0]) != 1 {
		return fmt.Errorf("%w: state %q", ErrSyntax, truncate(f[0], 20))
	}
	s.State = f[0][0]
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil || ppid < 0 {
		return fmt.Errorf("%w: ppid %q", ErrSyntax, truncate(f[1], 20))
	}
	s.PPID = ppid
	var v [4]uint64
	for i := range v {
		// cutime and cstime are signed in proc(5) but never negative in
		// practice; a negative one is an error here.
		if v[i], err = strconv.ParseUint(string(f[11+i]), 10, 64); err != nil {
			return fmt.Errorf("%w: field %d %q", ErrSyntax, 14+i, truncate(f[11+i], 20))
		}
	}
	s.UTime, s.STime, s.CUTime, s.CSTime = v[0], v[1], v[2], v[3]
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

// ReadStat reads dir/PID/stat ("/proc" for dir on a live system).
func ReadStat(dir string, pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, fmt.Errorf("proctree: %w", err)
	}
	return ParseStat(b)
}

// Table is a snapshot of every process's stat, by PID.
type Table map[int]Stat

// Read reads dir/*/stat for every numeric entry of dir. Processes that
// exit while it reads, and stat files that do not parse, are left out.
func Read(dir string) (Table, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("proctree: %w", err)
	}
	t := Table{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := ReadStat(dir, pid); err == nil && s.PID == pid {
			t[pid] = s
		}
	}
	return t, nil
}

// Descendants lists the processes below roots, not the roots themselves,
// breadth first (children in PID order).
func (t Table) Descendants(roots ...int) []int {
	kids := map[int][]int{}
	for pid, s := range t {
		kids[s.PPID] = append(kids[s.PPID], pid)
	}
	var out []int
	seen := map[int]bool{}
	for _, r := range roots {
		seen[r] = true
	}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		k := kids[p]
		slices.Sort(k)
		for _, c := range k {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// TreeTicks sums the CPU ticks of root and of every live descendant.
func (t Table) TreeTicks(root int) (uint64, error) {
	s, ok := t[root]
	if !ok {
		return 0, fmt.Errorf("proctree: process %d is gone", root)
	}
	sum := s.Ticks()
	for _, d := range t.Descendants(root) {
		sum += t[d].Ticks()
	}
	return sum, nil
}

// Find lists, in PID order, the processes under dir whose argument vector
// (dir/PID/cmdline, NUL-separated) satisfies match. Processes that exit
// while it reads, and kernel threads (no arguments), are left out.
func Find(dir string, match func(argv []string) bool) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("proctree: %w", err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "cmdline"))
		if err == nil && len(b) > 0 && match(SplitCmdline(b)) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// SplitCmdline splits the contents of a cmdline file into arguments. The
// last argument's terminating NUL is optional (a process that rewrote its
// arguments may leave it out).
func SplitCmdline(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	var argv []string
	for _, a := range bytes.Split(b, []byte{0}) {
		argv = append(argv, string(a))
	}
	return argv
}
