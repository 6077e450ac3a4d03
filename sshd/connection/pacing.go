package connection

import "time"

// Send pacing (Config.PaceSends).
//
// A channel's window bounds what the peer lets us send, not what the path
// needs. OpenSSH's client appends everything it receives for a channel to
// one buffer and compacts that buffer (moving all it holds) as it drains
// it into the local program, so a sender that keeps its 2 MiB window full
// makes the client spend its CPU moving bytes: a 256 MiB scp download
// from offload took 1.3-1.5 s with 34% of the client's samples in
// memmove, against 0.6-0.9 s from OpenSSH's sshd, whose single loop sends
// more slowly; holding offload to 512 KiB in flight made it 0.43-0.46 s
// (docs/benchmarks.md).
//
// The pacer keeps the data in flight near what the path needs, the way
// TCP Vegas does: it times each window adjustment against the moment the
// bytes it returns were sent. The smallest delay seen is the path's own;
// a longer one means bytes waited in a queue (most likely the client's
// buffer), about limit × (1 − min/delay) of them. Once per round trip the
// limit shrinks by half the excess while that estimate is above
// paceQueueHigh, and grows while it is below paceQueueLow, so a queue,
// and with it a busy path, always remains; on
// a long path the delays stay near the minimum and the limit stays at the
// window. It is for peers that return window early: OpenSSH's client
// adjusts once 3 packets' worth (96 KiB) have been consumed, far below
// paceFloor, so the limit never stops a channel that the window would not.
// For any other peer a valve stops pacing on a channel where the limit
// held a sender back for paceValve without an adjustment coming.

const (
	paceFloor     = 512 << 10 // smallest limit on bytes in flight
	paceStep      = 64 << 10  // limit change per window adjustment
	paceQueueHigh = 256 << 10 // estimated queue above which the limit shrinks
	paceQueueLow  = 64 << 10  // and below which it grows
	paceMarkGap   = 32 << 10  // bytes between send-time samples
	paceValve     = 50 * time.Millisecond
)

// pacer limits a channel's bytes in flight; channel.mu guards it. A nil
// pacer limits nothing.
type pacer struct {
	limit  uint32 // bytes allowed in flight
	window uint32 // the peer's window at open; in flight = window − outWindow
	sent   uint64 // bytes sent
	acked  uint64 // bytes the peer has returned with WINDOW_ADJUST
	marks  [64]paceMark
	head   int
	n      int
	minRTT int64 // nanoseconds; 0 until measured
	next   int64 // no limit change before this time
	// The valve: when the limit holds sends back and no adjustment comes
	// for paceValve, the peer may be waiting for more data before it
	// returns window; pacing then stops for this channel.
	valve      *time.Timer
	valveAcked uint64 // acked when the valve was armed
	armed      bool   // the valve runs, for valveAcked
	armedAt    int64
	off        bool
}

// paceMark records when the first off bytes had all been sent.
type paceMark struct {
	off uint64
	at  int64
}

// newPacer returns a pacer for a peer window of w bytes, or nil when the
// window is too small for pacing to matter.
func newPacer(w uint32) *pacer {
	if w <= paceFloor {
		return nil
	}
	return &pacer{limit: w, window: w}
}

// allow returns how much of outWindow may be sent now.
func (p *pacer) allow(outWindow uint32) uint32 {
	if p == nil || p.off {
		return outWindow
	}
	inFlight := p.window - min(outWindow, p.window)
	if inFlight >= p.limit {
		return 0
	}
	return min(outWindow, p.limit-inFlight)
}

// onSend notes k bytes sent at now.
func (p *pacer) onSend(k uint32, now int64) {
	if p == nil {
		return
	}
	p.sent += uint64(k)
	if p.n == len(p.marks) {
		return
	}
	if p.n > 0 && p.sent-p.marks[(p.head+p.n-1)%len(p.marks)].off < paceMarkGap {
		return
	}
	p.marks[(p.head+p.n)%len(p.marks)] = paceMark{off: p.sent, at: now}
	p.n++
}

// onAdjust notes a WINDOW_ADJUST of n bytes at now and updates the limit
// from the delay of the newest bytes it returns.
func (p *pacer) onAdjust(n uint32, now int64) {
	if p == nil {
		return
	}
	p.acked += uint64(n)
	at := int64(-1)
	for p.n > 0 && p.marks[p.head].off <= p.acked {
		at = p.marks[p.head].at
		p.head = (p.head + 1) % len(p.marks)
		p.n--
	}
	if at >= 0 {
		p.update(max(now-at, 1), now)
	}
}

// update moves the limit, at most once per round trip (a change shows in
// the delays only one round trip later), by half the excess queue down or
// by paceStep up.
func (p *pacer) update(rtt, now int64) {
	if p.minRTT == 0 || rtt < p.minRTT {
		p.minRTT = rtt
	}
	if now < p.next {
		return
	}
	queued := uint64(p.limit) * uint64(rtt-p.minRTT) / uint64(rtt)
	old := p.limit
	switch {
	case queued > paceQueueHigh && 2*rtt > 3*p.minRTT:
		cut := max(paceStep, uint32((queued-paceQueueHigh)/2))
		p.limit = max(paceFloor, p.limit-min(cut, p.limit))
	case queued < paceQueueLow || 4*rtt < 5*p.minRTT:
		p.limit = min(p.window, p.limit+paceStep)
	}
	if p.limit != old {
		p.next = now + rtt
	}
}

// held notes that a sender is about to wait: when the limit, not the
// window, holds it back, it arms the valve (once per window adjustment:
// wake-ups for other reasons leave it running), which calls release
// after paceValve. channel.mu is held.
func (p *pacer) held(outWindow uint32, now int64, release func()) {
	if p == nil || p.off || outWindow == 0 || (p.armed && p.valveAcked == p.acked) {
		return
	}
	p.armed, p.valveAcked, p.armedAt = true, p.acked, now
	if p.valve == nil {
		p.valve = time.AfterFunc(paceValve, release)
	} else {
		p.valve.Reset(paceValve)
	}
}

// expire turns pacing off when nothing was returned since the valve was
// armed; channel.mu is held.
func (p *pacer) expire(now int64) {
	if now-p.armedAt < int64(paceValve) {
		return // an earlier arming's timer; the latest one is pending
	}
	p.armed = false
	if p.acked == p.valveAcked {
		p.off = true
	}
}
