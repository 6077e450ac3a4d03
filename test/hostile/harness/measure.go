package harness

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Goroutines returns runtime.NumGoroutine.
func Goroutines() int { return runtime.NumGoroutine() }

// SettleGoroutines waits up to timeout for the goroutine count to drop to
// at most limit, collecting garbage on the way, and returns the last
// count and whether it got there.
func SettleGoroutines(limit int, timeout time.Duration) (int, bool) {
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= limit {
			return n, true
		}
		if time.Now().After(deadline) {
			return n, false
		}
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
}

// GoroutineDump returns the stacks of every goroutine, for a failure
// message; long dumps are cut.
func GoroutineDump() string {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	s := string(buf[:n])
	if len(s) > 32<<10 {
		s = s[:32<<10] + "\n... (cut)"
	}
	return s
}

// CountStacks counts goroutines whose stack mentions substr.
func CountStacks(substr string) int {
	buf := make([]byte, 4<<20)
	n := runtime.Stack(buf, true)
	c := 0
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, substr) {
			c++
		}
	}
	return c
}

// HeapInUse returns the heap in use after a collection.
func HeapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// HeapSampler records the largest HeapInuse seen while it runs.
type HeapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

// SampleHeap starts sampling every interval.
func SampleHeap(interval time.Duration) *HeapSampler {
	h := &HeapSampler{stop: make(chan struct{})}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			h.sample()
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *HeapSampler) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	for {
		p := h.peak.Load()
		if m.HeapInuse <= p || h.peak.CompareAndSwap(p, m.HeapInuse) {
			return
		}
	}
}

// Stop ends sampling and returns the peak.
func (h *HeapSampler) Stop() uint64 {
	close(h.stop)
	h.wg.Wait()
	return h.peak.Load()
}

// MiB formats a byte count.
func MiB(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
