package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseCPUSplit(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	if !allowed.IsSet(0) || !allowed.IsSet(1) {
		t.Skip("needs CPUs 0 and 1")
	}
	s, err := parseCPUSplit("0", "1")
	if err != nil || !s.enabled() || s.describe() != "servers on CPUs 0; the harness and its clients on CPUs 1" {
		t.Fatalf("0/1: %+v %v", s, err)
	}
	if s, err := parseCPUSplit("", ""); err != nil || s.enabled() {
		t.Fatalf("none: %+v %v", s, err)
	}
	for _, bad := range [][2]string{{"0", ""}, {"", "1"}, {"0-1", "1"}, {"0", "x"}, {"1-0", "0"}, {"0", "-1"}, {"0", "1023"}} {
		if _, err := parseCPUSplit(bad[0], bad[1]); err == nil || !strings.HasPrefix(err.Error(), "bench: ") {
			t.Errorf("%q/%q: %v, want a bench: error", bad[0], bad[1], err)
		}
	}
	if l, err := parseCPUList("0-1,1,0"); err != nil || len(l) != 2 {
		t.Errorf("0-1,1,0: %v %v", l, err)
	}
}

// TestPinSelf pins every thread of the test process and puts them back.
func TestPinSelf(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	if !before.IsSet(0) || before.Count() < 2 {
		t.Skip("needs CPU 0 and another")
	}
	var all []int
	for c := range 1024 {
		if before.IsSet(c) {
			all = append(all, c)
		}
	}
	defer pinSelf(all)
	if err := pinSelf([]int{0}); err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &got); err != nil {
			continue // the thread ended
		}
		if got.Count() != 1 || !got.IsSet(0) {
			t.Errorf("thread %d runs on %d CPUs, want only CPU 0", tid, got.Count())
		}
	}
}
