package monitor

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offload/offload/sshd/penalty"
)

// TestRekeyRates: before authentication a connection gets a couple of
// re-exchange signatures and a source its bucket.
func TestRekeyRates(t *testing.T) {
	r := newRates()
	now := time.Now()
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}
	pre := bucket{tokens: connRekeyBurst, last: now}
	for i := 0; i < connRekeyBurst; i++ {
		if !r.allowRekey(&pre, addr, now) {
			t.Fatalf("pre-auth re-exchange %d refused", i)
		}
	}
	if r.allowRekey(&pre, addr, now) {
		t.Fatal("a pre-auth connection re-keyed beyond its burst")
	}
	var others int
	for i := 0; i < 100; i++ { // many connections from one source
		b := newConnBucket()
		if r.allowRekey(&b, addr, now) {
			others++
		}
	}
	if others >= 100 || others > srcRekeyBurst {
		t.Fatalf("%d re-exchanges from one source at once, want at most %d", others, srcRekeyBurst)
	}
	if !r.allowRekey(&pre, addr, now.Add(connRekeyEvery)) {
		t.Fatal("no pre-auth re-exchange one interval later")
	}
}

// TestSignGate: one signature of a connection at a time, while other
// connections' go on.
func TestSignGate(t *testing.T) {
	var a, b signGate
	var inA, maxA atomic.Int32
	var wg sync.WaitGroup
	leaveB := b.enter() // b's turn is taken throughout: a must not care
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leave := a.enter()
			n := inA.Add(1)
			for m := maxA.Load(); n > m && !maxA.CompareAndSwap(m, n); m = maxA.Load() {
			}
			inA.Add(-1)
			leave()
		}()
	}
	wg.Wait()
	leaveB()
	if maxA.Load() != 1 {
		t.Fatalf("%d signatures of one connection at once, want 1", maxA.Load())
	}
}

// FuzzRekeyRates drives the pre-auth re-exchange limits and the
// per-source penalties with any sequence of events from a few sources
// and checks the documented bounds (docs/security.md):
//   - a connection gets at most connRekeyBurst re-exchange signatures
//     plus one per connRekeyEvery, a source at most srcRekeyBurst plus
//     srcRekeyPerSec per second, over any window;
//   - what one source does never changes what another is granted: each
//     source's decisions equal those of a run with its events alone;
//   - penalties of one source never refuse another source outside its
//     network block (PerSourceNetBlockSize), whatever the table's
//     overflow does.
func FuzzRekeyRates(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0})
	f.Add([]byte{0x10, 0x20, 0x30, 0x41, 0x52, 0x63, 0x74, 0x85, 0x96, 0xa7, 0xb8, 0xc9, 0xda, 0xeb, 0xfc, 0x0d})
	f.Add(make([]byte, 240))
	f.Fuzz(func(t *testing.T, in []byte) {
		evs := decodeEvents(in)
		checkRates(t, evs)
		checkPenalties(t, evs)
	})
}

// event is one step of the fuzzed sequence: after advance, source src
// asks for a re-exchange signature on its connection conn (or ends a
// connection with a penalty kind).
type event struct {
	src, conn int
	advance   time.Duration
	penalise  bool
	kind      penalty.Kind
}

// fuzzSources are distinct sources: two share an IPv4 /24 (distinct
// at the default /32 block), one is IPv4-mapped IPv6 of another IPv4
// source's neighbour, two IPv6.
var fuzzSources = []string{"192.0.2.1", "192.0.2.2", "::ffff:198.51.100.7", "2001:db8::1", "2001:db8:1::1", "203.0.113.9"}

const fuzzConns = 4 // connections per source

func decodeEvents(in []byte) []event {
	var evs []event
	for i := 0; i+2 < len(in) && len(evs) < 200; i += 3 {
		b0, b1, b2 := in[i], in[i+1], in[i+2]
		ev := event{src: int(b0) % len(fuzzSources), conn: int(b0>>4) % fuzzConns}
		// Steps from none to a minute, mostly short.
		ev.advance = time.Duration(b1) * time.Duration(b1) * time.Millisecond
		if b2&0x80 != 0 {
			ev.penalise, ev.kind = true, penalty.Kind(int(b2&0x7f)%6)
		}
		evs = append(evs, ev)
	}
	return evs
}

func sourceAddr(i int) *net.TCPAddr {
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(fuzzSources[i]), uint16(1000+i)))
}

// grant is one decision of the rate limits.
type grant struct {
	at      time.Time
	src, cn int
	ok      bool
}

// runRates replays evs (only those of keep, when not nil) on fresh
// limits and returns every decision.
func runRates(evs []event, keep func(event) bool) []grant {
	r := newRates()
	start := time.Unix(1_800_000_000, 0)
	now := start
	conns := map[[2]int]*bucket{}
	var out []grant
	for _, ev := range evs {
		now = now.Add(ev.advance)
		if ev.penalise || keep != nil && !keep(ev) {
			continue
		}
		k := [2]int{ev.src, ev.conn}
		if conns[k] == nil {
			b := bucket{tokens: connRekeyBurst, last: now}
			conns[k] = &b
		}
		out = append(out, grant{at: now, src: ev.src, cn: ev.conn, ok: r.allowRekey(conns[k], sourceAddr(ev.src), now)})
	}
	return out
}

func checkRates(t *testing.T, evs []event) {
	all := runRates(evs, nil)
	// Bounds over every window, per connection and per source.
	for i := range all {
		perConn, perSrc := 0, 0
		for j := i; j < len(all); j++ {
			if !all[j].ok {
				continue
			}
			span := all[j].at.Sub(all[i].at).Seconds()
			if all[j].src == all[i].src {
				perSrc++
				if limit := srcRekeyBurst + srcRekeyPerSec*span; float64(perSrc) > limit+1e-9 {
					t.Fatalf("source %d got %d signatures in %.3fs (limit %.1f)", all[i].src, perSrc, span, limit)
				}
				if all[j].cn == all[i].cn {
					perConn++
					if limit := connRekeyBurst + span/connRekeyEvery.Seconds(); float64(perConn) > limit+1e-9 {
						t.Fatalf("connection %d/%d got %d signatures in %.3fs (limit %.1f)", all[i].src, all[i].cn, perConn, span, limit)
					}
				}
			}
		}
	}
	// Isolation: each source's decisions as if it were alone.
	for s := range fuzzSources {
		alone := runRates(evs, func(ev event) bool { return ev.src == s })
		var mixed []grant
		for _, g := range all {
			if g.src == s {
				mixed = append(mixed, g)
			}
		}
		for i := range alone {
			if alone[i] != mixed[i] {
				t.Fatalf("source %d: decision %d is %v among others, %v alone", s, i, mixed[i].ok, alone[i].ok)
			}
		}
	}
}

// checkPenalties replays the penalties of evs on a tracker with a tiny
// table (so that overflow happens) and checks that a source is only
// ever refused for its own network's penalties.
func checkPenalties(t *testing.T, evs []event) {
	cfg := penalty.Defaults()
	cfg.MaxSources4, cfg.MaxSources6 = 2, 1
	now := time.Unix(1_800_000_000, 0)
	tr, err := penalty.New(&cfg, nopLogger(), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	// Penalties each source caused, with when they end at most.
	until := make([]time.Time, len(fuzzSources))
	for _, ev := range evs {
		now = now.Add(ev.advance)
		addr := sourceAddr(ev.src).AddrPort().Addr()
		if ev.penalise {
			tr.Penalize(addr, ev.kind)
			if end := now.Add(cfg.Max); end.After(until[ev.src]) {
				until[ev.src] = end
			}
			continue
		}
		slot, err := tr.Admit(addr)
		if err == nil {
			slot.Release()
			continue
		}
		// A penalty is in force up to its expiry included (as OpenSSH
		// keeps one whose expiry is not before now): one capped at Max
		// still refuses at exactly until.
		if now.After(until[ev.src]) {
			t.Fatalf("source %s refused (%v) though it has caused no penalty that could still run", addr, err)
		}
	}
}

func nopLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
