package connection

import (
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

const ms = int64(time.Millisecond)

// simulate runs a sender through p for the given time. Each 32 KiB
// chunk reaches the peer delay(i) after it is sent (i counts chunks), but
// the peer consumes at most rate bytes per second (0: no limit); it
// returns window in 96 KiB steps, as OpenSSH's client does. It returns
// the limit at the end.
func simulate(p *pacer, d time.Duration, rate int64, delay func(i int) int64) uint32 {
	type chunk struct {
		n   uint32
		due int64
	}
	out, now, lastDue, consumed := p.window, int64(0), int64(0), uint32(0)
	var queue []chunk
	for i := 0; now < int64(d); {
		for k := p.allow(out); k > 0; k = p.allow(out) {
			k = min(k, 32<<10)
			out -= k
			p.onSend(k, now)
			due := now + delay(i)
			if rate > 0 {
				due = max(due, lastDue+int64(k)*int64(time.Second)/rate)
			}
			lastDue = due
			queue = append(queue, chunk{k, due})
			i++
		}
		c := queue[0]
		queue = queue[1:]
		now = max(now, c.due)
		if consumed += c.n; consumed >= 96<<10 {
			out += consumed
			p.onAdjust(consumed, now)
			consumed = 0
		}
	}
	return p.limit
}

// TestPacerLongPath keeps the whole window in flight on a 20 ms path
// with 4 ms of jitter and no queue.
func TestPacerLongPath(t *testing.T) {
	p := newPacer(2 << 20)
	jitter := []int64{0, 3, 1, 4, 2}
	if l := simulate(p, 5*time.Second, 0, func(i int) int64 { return 20*ms + jitter[i%5]*ms }); l != 2<<20 {
		t.Fatalf("limit %d on a 20 ms path without a queue, want the window", l)
	}
}

// TestPacerQueue shrinks the limit when bytes queue at a receiver that
// drains 300 MB/s, down to the floor and no further.
func TestPacerQueue(t *testing.T) {
	p := newPacer(2 << 20)
	l := simulate(p, 5*time.Second, 300e6, func(int) int64 { return ms / 5 })
	if l > 768<<10 || l < paceFloor {
		t.Fatalf("limit %d with a queue; want between %d and 768 KiB", l, paceFloor)
	}
}

// TestPacerSlowLongPath keeps enough in flight for a 20 ms path whose
// receiver drains 50 MB/s (1 MB in flight): the queue stays small and the
// limit above what the path needs.
func TestPacerSlowLongPath(t *testing.T) {
	p := newPacer(2 << 20)
	if l := simulate(p, 5*time.Second, 50e6, func(int) int64 { return 20 * ms }); l < 1e6 {
		t.Fatalf("limit %d below the 1 MB the path needs", l)
	}
}

// TestPacerAllow checks that the limit never lets more out than the
// window, and that nil and stopped pacers limit nothing.
func TestPacerAllow(t *testing.T) {
	var nilp *pacer
	if nilp.allow(12345) != 12345 {
		t.Error("nil pacer limits")
	}
	if newPacer(paceFloor) != nil {
		t.Error("pacer for a window at the floor")
	}
	p := newPacer(1 << 20)
	p.limit = 300 << 10
	if got := p.allow(1 << 20); got != 300<<10 {
		t.Errorf("allow with nothing in flight = %d, want the limit", got)
	}
	if got := p.allow(800 << 10); got != 76<<10 {
		t.Errorf("allow with 224 KiB in flight = %d, want 76 KiB", got)
	}
	if got := p.allow(100 << 10); got != 0 {
		t.Errorf("allow with 924 KiB in flight = %d, want 0", got)
	}
	if got := p.allow(5 << 20); got != 300<<10 {
		t.Errorf("allow after the peer grew its window = %d, want the limit", got)
	}
	p.off = true
	if got := p.allow(100 << 10); got != 100<<10 {
		t.Errorf("stopped pacer allows %d, want the window", got)
	}
}

// TestPacerValve holds a sender back with the limit while the peer
// returns no window (as a peer would that waits for half its window to be
// consumed): the valve stops pacing and the sender goes on.
func TestPacerValve(t *testing.T) {
	m := &mux{cfg: (&Config{PaceSends: true}).settings(), ctx: t.Context()}
	c := newChannel(m, 0, openMsg{window: 4 << 20, maxPacket: 32768})
	c.pace.limit = paceFloor // as if a queue had been seen
	sent := 0
	for sent < paceFloor {
		k, err := c.reserve(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		sent += k
	}
	done := make(chan int, 1)
	go func() {
		k, _ := c.reserve(1 << 20)
		done <- k
	}()
	select {
	case k := <-done:
		if k == 0 {
			t.Fatal("reserve returned nothing")
		}
	case <-testenv.Timeout(t):
		t.Fatal("the sender is still held back by the limit without window adjustments")
	}
	c.mu.Lock()
	off := c.pace.off
	c.mu.Unlock()
	if !off {
		t.Error("pacing still on after the valve")
	}
}
