package monitor

import (
	"net"
	"testing"
	"time"
)

// TestRekeyRates: before authentication a connection gets a couple of
// re-exchange signatures and a source its bucket; after, a connection
// keeps up with one re-exchange per half second, as a fast transfer with
// OpenSSH's 2 GiB rekey limit needs.
func TestRekeyRates(t *testing.T) {
	r := newRates()
	now := time.Now()
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}
	pre := newConnBucket()
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
	auth := bucket{tokens: authRekeyBurst, last: now}
	for s := 0; s < 60; s++ { // a minute of one re-exchange every 0.5 s
		at := now.Add(time.Duration(s) * 500 * time.Millisecond)
		if !r.allowAuthRekey(&auth, at) {
			t.Fatalf("authenticated re-exchange refused after %v", at.Sub(now))
		}
	}
}
