package postauth

import (
	"runtime"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/transport"
)

// TestSetProcs: one connection runs on one CPU, more on as many CPUs as
// there are connections, up to the machine's; none left goes back to one.
func TestSetProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cpus := runtime.NumCPU()
	for _, c := range []struct{ conns, want int }{
		{1, 1}, {2, min(2, cpus)}, {cpus + 5, cpus}, {0, 1},
	} {
		setProcs(c.conns)
		if got := runtime.GOMAXPROCS(0); got != c.want {
			t.Errorf("%d connections: GOMAXPROCS %d, want %d", c.conns, got, c.want)
		}
	}
}

// TestSettledConnectionsCount: a connection counts toward the process's
// CPUs only once it has lasted settleAfter; one that ends before changes
// nothing, and the end of a settled one gives its CPU back.
func TestSettledConnectionsCount(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs to tell one connection's CPUs from two's")
	}
	setProcs(0)
	p := &process{conns: map[uint64]*transport.Conn{}, timers: map[uint64]*time.Timer{}, settled: map[uint64]bool{}}
	p.track(1, nil)
	p.track(2, nil)
	p.track(3, nil)
	p.untrack(3) // ends at once: never counted
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d before any connection settled, want 1", got)
	}
	if !testenv.WaitUntil(t, func() bool { return runtime.GOMAXPROCS(0) == 2 }) {
		t.Fatalf("GOMAXPROCS %d with two settled connections, want 2", runtime.GOMAXPROCS(0))
	}
	p.untrack(1)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d after one of two ended, want 1", got)
	}
	p.mu.Lock()
	left := len(p.timers) + len(p.settled)
	p.mu.Unlock()
	if left != 2 { // connection 2's timer and its settled mark
		t.Errorf("%d timers and marks left for one live connection, want 2", left)
	}
	p.untrack(2)
}
