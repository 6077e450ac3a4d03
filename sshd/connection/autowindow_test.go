package connection

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// simulateWindow runs a window-limited sender over a path of the given round
// trip for the given time: each round trip it sends the whole window
// (or what the program takes, rate bytes per second, if less), and the
// receiver gives the window back in halves as it is consumed.
func simulateWindow(w *autoWindow, rtt, rate int64, d time.Duration) {
	simulateMeasured(w, rtt, rtt, rate, d)
}

// simulateMeasured is simulateWindow with the receiver's measurement of
// the round trip (0: none yet) apart from the path's.
func simulateMeasured(w *autoWindow, rtt, measured, rate int64, d time.Duration) {
	for now := int64(1); now < int64(d); now += rtt {
		sent := int64(w.size)
		if cap := rate * rtt / int64(time.Second); rate > 0 && cap < sent {
			sent = cap
		}
		for k := int64(0); k < 2; k++ { // two adjustments a round trip
			w.adjusted(uint32(sent/2), now+k*rtt/2, measured)
		}
	}
}

// TestAutoWindowGrowsWithRTT: at 100 ms a window-limited sender doubles
// the window once per round trip up to the maximum; on loopback (50 µs,
// where 1 GB/s moves far less than a window per round trip) and behind a
// slow program the window stays put.
func TestAutoWindowGrowsWithRTT(t *testing.T) {
	w := autoWindow{size: 2 << 20, max: 32 << 20}
	simulateWindow(&w, 100*ms, 0, 300*time.Millisecond)
	if w.size != 4<<20 {
		t.Errorf("after three round trips at 100 ms the window is %d, want %d", w.size, 4<<20)
	}
	simulateWindow(&w, 100*ms, 0, 2*time.Second)
	if w.size != 32<<20 {
		t.Errorf("after 2 s at 100 ms the window is %d, want the maximum %d", w.size, 32<<20)
	}
	lo := autoWindow{size: 2 << 20, max: 32 << 20}
	simulateWindow(&lo, 50_000, 1e9, time.Second)
	if lo.size != 2<<20 {
		t.Errorf("loopback at 1 GB/s grew the window to %d", lo.size)
	}
	// On loopback a program that drained its pipe takes a window's worth
	// in a burst: 1 MiB twice within 100 µs, every 2.6 ms (800 MB/s),
	// with a round trip of 379 µs measured.
	burst := autoWindow{size: 2 << 20, max: 32 << 20}
	for now := int64(1); now < int64(time.Second); now += 2_600_000 {
		burst.adjusted(1<<20, now, 379_000)
		burst.adjusted(1<<20, now+100_000, 379_000)
	}
	if burst.size != 2<<20 {
		t.Errorf("bursts on loopback grew the window to %d", burst.size)
	}
	slow := autoWindow{size: 2 << 20, max: 32 << 20}
	simulateWindow(&slow, 100*ms, 5e6, 2*time.Second) // the program takes 5 MB/s
	if slow.size != 2<<20 {
		t.Errorf("a program reading 5 MB/s at 100 ms grew the window to %d", slow.size)
	}
	fixed := autoWindow{size: 2 << 20, max: 2 << 20}
	simulateWindow(&fixed, 100*ms, 0, time.Second)
	if fixed.size != 2<<20 {
		t.Errorf("a window without room to grow grew to %d", fixed.size)
	}
	// A loaded machine answered the first probe late: 92 ms measured on
	// loopback, where a 2 MiB window carries 500 MB/s. Consuming far more
	// than the window allows at that round trip proves it wrong.
	late := autoWindow{size: 2 << 20, max: 32 << 20}
	simulateMeasured(&late, 4*ms, 92*ms, 5e8, 2*time.Second)
	if late.size != 2<<20 {
		t.Errorf("a round trip measured 23x too long grew the window to %d", late.size)
	}
	// OpenSSH's client: a round trip of a few milliseconds (loopback on a
	// loaded machine) grows nothing; a WAN's 100 ms still does.
	busy := autoWindow{size: 2 << 20, max: 32 << 20, rate: openSSHWindowRate}
	simulateWindow(&busy, 4*ms, 0, 2*time.Second)
	if busy.size != 2<<20 {
		t.Errorf("an OpenSSH client's window grew to %d at 4 ms", busy.size)
	}
	wan := autoWindow{size: 2 << 20, max: 32 << 20, rate: openSSHWindowRate}
	simulateWindow(&wan, 100*ms, 0, 2*time.Second)
	if wan.size != 32<<20 {
		t.Errorf("an OpenSSH client's window at 100 ms is %d, want the maximum %d", wan.size, 32<<20)
	}
	unknown := autoWindow{size: 2 << 20, max: 32 << 20}
	simulateMeasured(&unknown, 100*ms, 0, 0, time.Second)
	if unknown.size != 2<<20 {
		t.Errorf("a window grew to %d without a round trip measured", unknown.size)
	}
}

// TestAutoWindowSaturates: counts near 2^32 neither wrap nor panic, and
// the window never passes its maximum.
func TestAutoWindowSaturates(t *testing.T) {
	w := autoWindow{size: 1 << 30, max: math.MaxInt32}
	for now := int64(1); now < 10*int64(time.Second); now += int64(time.Second) {
		w.adjusted(math.MaxUint32, now, int64(time.Second)) // beyond any window: no growth
	}
	if w.size != 1<<30 {
		t.Errorf("counts beyond what the window allows grew it to %d", w.size)
	}
	for now := 10 * int64(time.Second); now < 100*int64(time.Second); now += int64(time.Second) / 2 {
		w.adjusted(w.size/2, now, int64(time.Second)) // a window a round trip, in halves
	}
	if w.size != math.MaxInt32 {
		t.Errorf("window %d, want the maximum %d", w.size, math.MaxInt32)
	}
}

// TestRoundTripTimesReplies: replies are matched to requests in order,
// a reply nobody asked for is ignored, the smallest sample is kept (a
// later one waited behind queued data), and a measurement is due only
// while there is none and none is under way.
func TestRoundTripTimesReplies(t *testing.T) {
	var r roundTrip
	now := int64(10 * time.Second)
	if !r.due() {
		t.Fatal("no measurement due before any")
	}
	r.answered(now) // unsolicited
	if r.last.Load() != 0 {
		t.Fatal("an unsolicited reply measured a round trip")
	}
	r.requested(now)
	r.requested(now + 30*ms)
	if r.due() {
		t.Error("a measurement is due while one is under way")
	}
	r.answered(now + 100*ms)
	if got := r.last.Load(); got != 100*ms {
		t.Errorf("round trip %d, want %d", got, 100*ms)
	}
	r.answered(now + 110*ms)
	if got := r.last.Load(); got != 80*ms {
		t.Errorf("second round trip %d, want the smaller %d", got, 80*ms)
	}
	r.requested(now + time.Second.Nanoseconds())
	r.answered(now + time.Second.Nanoseconds() + 500*ms)
	if got := r.last.Load(); got != 80*ms {
		t.Errorf("a slower sample replaced the smallest: %d", got)
	}
	if r.due() {
		t.Error("a measurement is due although one was made")
	}
}

// TestChannelWindowGrows runs data through a channel's read loop with the
// round trip measured when the connection started (only when the window
// may grow): a channel whose program consumes a whole window per round
// trip is granted more than it consumed, a fixed window is not.
func TestChannelWindowGrows(t *testing.T) {
	for _, max := range []uint32{2 << 20, 32 << 20} {
		rec := &recordConn{}
		m := &mux{pc: rec, cfg: (&Config{WindowSize: 2 << 20, WindowMax: max}).settings(),
			perm: &perm.Permissions{}, ctx: context.Background(), chans: map[uint32]*channel{}}
		m.log = m.cfg.Logger
		m.ctl = newCtlQueue(rec)
		c := newChannel(m, 0, openMsg{kind: "session", sender: 7, window: math.MaxUint32, maxPacket: 32768})
		m.chans[0] = c
		m.startRoundTrip()
		if len(m.rtt.sent) == 1 {
			m.rtt.answered(m.rtt.sent[0] + int64(20*time.Millisecond))
		}
		d := wire.AppendBytes(appendChannelMsg(nil, wire.MsgChannelData, 0), make([]byte, 32768))
		buf := make([]byte, 32768)
		var granted uint64
		for i := range 512 { // 16 MiB, 2 MiB per round trip of 20 ms
			if i%64 == 0 {
				time.Sleep(20 * time.Millisecond)
			}
			if err := m.dispatch(d); err != nil {
				t.Fatal(err)
			}
			before := c.inWindow
			c.Read(buf)
			granted += uint64(c.inWindow - before)
		}
		m.ctl.close()
		grew := c.win.size > 2<<20
		if grew != (max > 2<<20) || granted > 16<<20 != grew {
			t.Errorf("max %d: window %d, %d bytes granted for 16 MiB consumed", max, c.win.size, granted)
		}
		if keepalive := sentKeepalive(rec); keepalive != grew {
			t.Errorf("max %d: keepalive sent %v, want %v", max, keepalive, grew)
		}
	}
}

func sentKeepalive(rec *recordConn) bool {
	for _, p := range rec.pkts {
		if p[0] == wire.MsgGlobalRequest {
			return true
		}
	}
	return false
}
