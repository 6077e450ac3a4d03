package postauth

import (
	"runtime"
	"testing"
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
