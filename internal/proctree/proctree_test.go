package proctree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// line formats a stat line as the kernel does, with the fields this
// package skips set to zero.
func line(s Stat) string {
	return fmt.Sprintf("%d (%s) %c %d 0 0 0 -1 4194560 0 0 0 0 %d %d %d %d 20 0 1 0 100 1 1\n",
		s.PID, s.Comm, s.State, s.PPID, s.UTime, s.STime, s.CUTime, s.CSTime)
}

func TestParseStat(t *testing.T) {
	// A command name with blanks and parentheses, as a process may set.
	want := Stat{PID: 4242, Comm: "sshd: a) b (x)", PPID: 17, State: 'S', UTime: 150, STime: 25, CUTime: 7, CSTime: 3}
	s, err := ParseStat([]byte(line(want)))
	if err != nil || s != want {
		t.Fatalf("got %+v, %v; want %+v", s, err, want)
	}
	if s.Ticks() != 185 {
		t.Fatalf("Ticks = %d, want 185", s.Ticks())
	}
	for _, bad := range []string{"", "12 sshd S 1", "x (a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14", "1 (a) S 1 2 3",
		"1 (a) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14", "1 (a) S 1 2 3 4 5 6 7 8 9 10 -1 12 13 14",
		"0 (a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14", "1 (a) S -1 2 3 4 5 6 7 8 9 10 11 12 13 14"} {
		if _, err := ParseStat([]byte(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseStat(%q) = %v, want ErrSyntax", bad, err)
		}
	}
}

// writeTable lays stats out as a /proc-like directory.
func writeTable(t *testing.T, stats ...Stat) string {
	dir := t.TempDir()
	for _, s := range stats {
		d := filepath.Join(dir, strconv.Itoa(s.PID))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(line(s)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTreeTicks(t *testing.T) {
	dir := writeTable(t,
		Stat{PID: 100, PPID: 1, State: 'S', UTime: 10, STime: 5, CUTime: 100, CSTime: 50}, // with reaped children
		Stat{PID: 101, PPID: 100, State: 'S', UTime: 3, STime: 2},
		Stat{PID: 102, PPID: 101, State: 'R', UTime: 1, STime: 1, CUTime: 4},
		Stat{PID: 200, PPID: 1, State: 'S', UTime: 999, STime: 999}, // unrelated
	)
	for _, junk := range []string{"self", "300"} { // not a process; an unreadable stat
		os.Mkdir(filepath.Join(dir, junk), 0o755)
	}
	tab, err := Read(dir)
	if err != nil || len(tab) != 4 {
		t.Fatalf("Read: %d processes, %v", len(tab), err)
	}
	if got := fmt.Sprint(tab.Descendants(100)); got != "[101 102]" {
		t.Fatalf("Descendants(100) = %s", got)
	}
	if got := fmt.Sprint(tab.Descendants(101, 200)); got != "[102]" {
		t.Fatalf("Descendants(101, 200) = %s", got)
	}
	if n, err := tab.TreeTicks(100); err != nil || n != 176 {
		t.Fatalf("TreeTicks = %d, %v", n, err)
	}
	if _, err := tab.TreeTicks(999); err == nil {
		t.Fatal("TreeTicks of a missing process succeeded")
	}
	if _, err := Read(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Read of a missing directory succeeded")
	}
}

// TestDescendantsCycle: a table whose parents loop (a hostile or torn
// snapshot) still ends.
func TestDescendantsCycle(t *testing.T) {
	tab := Table{1: {PID: 1, PPID: 2}, 2: {PID: 2, PPID: 3}, 3: {PID: 3, PPID: 2}} // 2 and 3 parent each other
	if got := fmt.Sprint(tab.Descendants(1)); got != "[]" {
		t.Fatalf("Descendants(1) = %s", got)
	}
	if got := fmt.Sprint(tab.Descendants(2)); got != "[1 3]" {
		t.Fatalf("Descendants(2) = %s", got)
	}
}

func TestReadSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc:", err)
	}
	s, err := ReadStat("/proc", os.Getpid())
	if err != nil || s.PID != os.Getpid() || s.PPID != os.Getppid() {
		t.Fatalf("ReadStat(self) = %+v, %v; want pid %d ppid %d", s, err, os.Getpid(), os.Getppid())
	}
}

// FuzzParseStat: any line parses or fails with ErrSyntax, and a line
// formatted from a Stat parses back to it.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (sshd: a) b (x)) S 17 4242 4242 0 -1 4194560 1 0 0 0 150 25 7 3 20 0 1 0 100 1 1\n"), "cat (x)", uint64(5))
	f.Fuzz(func(t *testing.T, b []byte, comm string, n uint64) {
		if _, err := ParseStat(b); err != nil && !errors.Is(err, ErrSyntax) {
			t.Fatalf("ParseStat(%q): %v", b, err)
		}
		if strings.ContainsAny(comm, "\x00") || len(comm) > 64 {
			return
		}
		want := Stat{PID: int(n%4194304) + 1, Comm: comm, PPID: int(n % 7), State: 'R', UTime: n, STime: n / 2, CUTime: n / 3, CSTime: n / 5}
		if got, err := ParseStat([]byte(line(want))); err != nil || got != want {
			t.Fatalf("round trip of %+v: %+v, %v", want, got, err)
		}
	})
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	for pid, cmdline := range map[string]string{
		"7":    "sleep\x0060\x00",
		"3":    "sleep\x0060",
		"12":   "sh\x00-c\x00sleep 60\x00",
		"9":    "", // a kernel thread
		"self": "sleep\x0060\x00",
	} {
		if err := os.MkdirAll(filepath.Join(dir, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, pid, "cmdline"), []byte(cmdline), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Find(dir, func(argv []string) bool { return slices.Equal(argv, []string{"sleep", "60"}) })
	if err != nil || !slices.Equal(got, []int{3, 7}) {
		t.Fatalf("Find(sleep 60) = %v, %v; want [3 7]", got, err)
	}
	any, _ := Find(dir, func([]string) bool { return true })
	if !slices.Equal(any, []int{3, 7, 12}) {
		t.Fatalf("Find(any) = %v, want [3 7 12]", any)
	}
}

func TestFindSelf(t *testing.T) {
	pids, err := Find("/proc", func(argv []string) bool { return slices.Equal(argv, os.Args) })
	if err != nil || !slices.Contains(pids, os.Getpid()) {
		t.Fatalf("Find(os.Args) = %v, %v; want it to hold %d", pids, err, os.Getpid())
	}
}
