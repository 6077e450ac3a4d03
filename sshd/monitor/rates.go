package monitor

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Limits on host-key signatures. The first signature of a connection is
// bounded by admission (MaxStartups, per-source limits); re-exchanges
// are cheap for a client to ask for and may cost a token operation each,
// so before authentication they are limited per connection and per
// source address. An authenticated connection is the user's: it is
// limited per connection only, loosely enough for a client that re-keys
// every 2 GiB (OpenSSH's default for AES) at a few GB/s.
const (
	connRekeyBurst  = 2                // pre-auth: re-exchange signatures a connection may have at once
	connRekeyEvery  = 10 * time.Second // and one more per interval
	srcRekeyBurst   = 20               // pre-auth: re-exchange signatures a source may have at once
	srcRekeyPerSec  = 5                // and this many more per second
	authRekeyBurst  = 10               // authenticated: re-exchange signatures a connection may have at once
	authRekeyPerSec = 2                // and this many more per second
	maxRateSources  = 10000            // sources remembered; older ones are forgotten
	rateSourceIdle  = time.Minute
	rateSourceSweep = 1000 // sweep the table after this many new sources
)

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

// allowAuthRekey takes a re-exchange signature for an authenticated
// connection.
func (r *rates) allowAuthRekey(conn *bucket, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return conn.take(now, authRekeyBurst, authRekeyPerSec)
}

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
