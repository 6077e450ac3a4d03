package monitor

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Limits on host-key signatures (docs/security.md, "Key re-exchanges").
// The first signature of a connection is bounded by admission
// (MaxStartups, per-source limits). Re-exchanges are cheap for a client
// to ask for and may cost a token operation each, so before
// authentication they are refused beyond a bucket per connection and
// one per source address. After authentication the monitor refuses
// none: it cannot tell the server's own re-exchanges (RekeyLimit) from
// the client's, nor see how much data a connection moves; the post-auth
// process delays a client's beyond its allowance (transport,
// ClientRekeyBurst and on), and the monitor serves one signature per
// connection at a time (signGate), so that a connection asking without
// end gets its turn among the others, not the token.
const (
	connRekeyBurst  = 2                // pre-auth: re-exchange signatures a connection may have at once
	connRekeyEvery  = 10 * time.Second // and one more per interval
	srcRekeyBurst   = 20               // pre-auth: re-exchange signatures a source may have at once
	srcRekeyPerSec  = 5                // and this many more per second
	maxRateSources  = 10000            // sources remembered; older ones are forgotten
	rateSourceIdle  = time.Minute
	rateSourceSweep = 1000 // sweep the table after this many new sources
)

// signGate lets one host-key signature of a connection run at a time:
// a legitimate connection never has two exchanges in flight, and
// signatures asked at once for one connection then wait their turn
// behind each other, not in front of other connections'. The zero
// value is open.
type signGate struct{ mu sync.Mutex }

// enter waits for the connection's turn; call the returned function
// when the signature is made.
func (g *signGate) enter() (leave func()) {
	g.mu.Lock()
	return g.mu.Unlock
}

// bucket is a token bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

func newConnBucket() bucket { return bucket{tokens: connRekeyBurst, last: time.Now()} }

// take takes a token from a bucket of capacity burst refilled at rate per
// second.
func (b *bucket) take(now time.Time, burst, rate float64) bool {
	if now.After(b.last) { // a clock that went back refills nothing
		b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// rates holds the per-source buckets.
type rates struct {
	mu    sync.Mutex
	src   map[netip.Addr]*bucket
	added int
}

func newRates() *rates { return &rates{src: map[netip.Addr]*bucket{}} }

// allowRekey takes a re-exchange signature for a connection from addr
// that has not authenticated.
func (r *rates) allowRekey(conn *bucket, addr net.Addr, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !conn.take(now, connRekeyBurst, 1/connRekeyEvery.Seconds()) {
		return false
	}
	ip := addrOf(addr)
	b := r.src[ip]
	if b == nil {
		r.sweep(now)
		b = &bucket{tokens: srcRekeyBurst, last: now}
		r.src[ip] = b
	}
	return b.take(now, srcRekeyBurst, srcRekeyPerSec)
}

// sweep forgets idle sources now and then, and the oldest when full.
func (r *rates) sweep(now time.Time) {
	if r.added++; r.added < rateSourceSweep && len(r.src) < maxRateSources {
		return
	}
	r.added = 0
	for ip, b := range r.src {
		if now.Sub(b.last) > rateSourceIdle || len(r.src) >= maxRateSources {
			delete(r.src, ip)
		}
	}
}

func addrOf(a net.Addr) netip.Addr {
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
