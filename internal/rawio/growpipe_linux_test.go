package rawio

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestGrowPipe enlarges a pipe through its Reader and through its
// RawConn; the kernel then reports the new capacity, and a size out of
// range is refused with the pipe unchanged.
func TestGrowPipe(t *testing.T) {
	pr, pw := pipe(t)
	r, w, ok := New(pr)
	if !ok {
		t.Fatal("New: no RawConn for a pipe")
	}
	size := func() int {
		var n int
		w.RC.Control(func(fd uintptr) { n, _ = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
		return n
	}
	before := size()
	if err := r.GrowPipe(256 << 10); err != nil {
		t.Fatalf("GrowPipe(256 KiB): %v", err)
	}
	if got := size(); got != 256<<10 {
		t.Fatalf("pipe holds %d bytes after GrowPipe(256 KiB) (before: %d)", got, before)
	}
	_, ww, _ := New(pw)
	if err := GrowPipe(ww.RC, 512<<10); err != nil || size() != 512<<10 {
		t.Fatalf("GrowPipe(RawConn, 512 KiB): %v, size %d", err, size())
	}
	for _, n := range []int{-1, 0, 1 << 40} {
		if err := r.GrowPipe(n); err == nil {
			t.Fatalf("GrowPipe(%d) succeeded", n)
		}
	}
	if got := size(); got != 512<<10 {
		t.Fatalf("a refused GrowPipe changed the size to %d", got)
	}
}
