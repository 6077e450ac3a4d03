package connection

import (
	"sync"
	"sync/atomic"

	"github.com/offload/offload/sshd/wire"
)

// # Receive windows that grow with the path
//
// A channel's receive window bounds what a client can have in flight, so
// a 2 MiB window caps an upload at 2 MiB per round trip: about 20 MB/s
// at 100 ms. A larger fixed window is no answer, because OpenSSH's client
// queues its whole window in one buffer and pays for compacting it (see
// client.go). So, as HPN-SSH does for its own client, the window starts
// where it is and grows only when the window is what limits the client:
// when, over at least two round trips, the program consumed half a
// window per round trip on average (the window is given back in halves,
// so a client it limits sends between a half and a whole window a round
// trip), the window doubles, up to Config.WindowMax, and while a window
// allows less than maxWindowRate. The average matters: data that waited
// in a pipe reaches the program in bursts far faster than the path
// carries it.
//
// The round trip is measured at the SSH layer, where the window is used
// — a proxy or a tunnel in the path counts, which TCP's own estimate of
// its hop would not show — by timing the answer to a want-reply
// keepalive@openssh.com, which every client answers (with failure when
// it does not know the name). Replies to global requests come in the
// order of the requests (RFC 4254 section 4), so the answers to
// ClientAliveInterval's probes are timed the same way.
//
// During an upload the client's answer waits behind the data it has
// queued, up to a window of it, so a sample taken then measures the
// queue, not the path: on loopback it would say milliseconds and let the
// window grow for nothing. The first probe therefore goes out when the
// connection layer starts, before any channel carries data, and the
// smallest sample is the one used.

// roundTrip times the peer's answers to our global requests.
type roundTrip struct {
	mu   sync.Mutex
	sent []int64      // when each unanswered request went out, oldest first
	last atomic.Int64 // the smallest round trip measured, ns; 0 before one
}

// requested notes a want-reply global request sent at now.
func (r *roundTrip) requested(now int64) {
	r.mu.Lock()
	r.sent = append(r.sent, now)
	r.mu.Unlock()
}

// answered takes the reply to the oldest unanswered request, received at
// now; a reply nobody asked for changes nothing.
func (r *roundTrip) answered(now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sent) == 0 {
		return
	}
	d := now - r.sent[0]
	r.sent = r.sent[1:]
	if d > 0 {
		if old := r.last.Load(); old == 0 || d < old {
			r.last.Store(d)
		}
	}
}

// due says whether a measurement is wanted: there is none yet and none
// under way (the first probe went unanswered, or was never sent).
func (r *roundTrip) due() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent) == 0 && r.last.Load() == 0
}

// startRoundTrip measures the round trip once while the connection is
// quiet, when a window may grow.
func (m *mux) startRoundTrip() {
	if m.cfg.windowMax > m.cfg.window {
		m.sendKeepalive(nowNano())
	}
}

// measureRoundTrip sends a timed keepalive when a measurement is due.
func (m *mux) measureRoundTrip(now int64) {
	if !m.rtt.due() {
		return
	}
	m.sendKeepalive(now)
}

// sendKeepalive sends keepalive@openssh.com with want-reply, timed.
func (m *mux) sendKeepalive(now int64) {
	m.rtt.requested(now)
	b := wire.AppendString([]byte{wire.MsgGlobalRequest}, "keepalive@openssh.com")
	m.ctl.send(wire.AppendBool(b, true))
}

// maxWindowRate (bytes per second) is where growth stops: a window that
// already lets a client send this much per round trip is not what limits
// it (on loopback 2 MiB allows several GB/s, more than any cipher here).
const maxWindowRate = 2e9

// openSSHWindowRate is maxWindowRate for OpenSSH's client, which pays
// more CPU per byte the larger its window (client.go): its window grows
// only where the path holds it under 200 MB/s (2 MiB at 10.5 ms or
// more), never on loopback or a LAN, even on a loaded machine that
// answers the round-trip probe a few milliseconds late (4 ms measured on
// loopback beside two busy loops, which let 2 MiB grow to 8 MiB and an
// upload take 9 s instead of 3.5 s).
const openSSHWindowRate = 2e8

// autoWindow is a channel's receive window and its growth.
type autoWindow struct {
	size, max uint32  // the window now, and how far it may grow
	rate      float64 // maxWindowRate, or less for a client a large window slows
	start     int64   // when the current round began, unix ns (0: none yet)
	bytes     uint32  // consumed since start
}

// adjusted accounts for n bytes given back at now, with rtt the round
// trip (0 when unknown), and returns how much the window grows.
func (w *autoWindow) adjusted(n uint32, now, rtt int64) uint32 {
	rate := w.rate
	if rate == 0 {
		rate = maxWindowRate
	}
	if w.size >= w.max || float64(w.size)*1e9 >= rate*float64(rtt) {
		return 0
	}
	w.bytes = satAdd(w.bytes, n)
	if w.start == 0 || rtt <= 0 {
		w.start, w.bytes = now, 0
		return 0
	}
	elapsed := now - w.start
	if elapsed < 2*rtt {
		return 0
	}
	var grow uint32
	if limited(w.bytes, w.size, elapsed, rtt) {
		grow = min(w.size, w.max-w.size)
		w.size += grow
	}
	w.start, w.bytes = now, 0
	return grow
}

// limited says whether a window of size bytes plausibly limits a client
// that had n bytes consumed in elapsed ns at the round trip rtt: the
// client sent at least half a window per round trip (the window comes
// back in halves), and no more than the window allows. A window lets at
// most size bytes through per round trip, plus one window queued before
// the count began, so over the two or more round trips counted at most
// 1.5 windows per round trip: more proves the round trip was measured
// too long — a loaded machine answers the first probe late (92 ms
// measured on loopback beside two busy loops) — and growing on it would
// hand OpenSSH's client a window whose queue it compacts at great cost
// (client.go): an upload measured 31 s instead of 4.6 s.
func limited(n, size uint32, elapsed, rtt int64) bool {
	perRTT := float64(n) * float64(rtt) / float64(elapsed) // bytes per round trip
	return perRTT >= 0.5*float64(size) && perRTT <= 1.5*float64(size)
}

func satAdd(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint32(0)
}
