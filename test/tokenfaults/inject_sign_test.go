package tokenfaults

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/testenv"
)

// rekeyEvery makes the client re-exchange keys often, so that an
// established session needs a host-key signature while it transfers.
const rekeyEvery = 512 << 10

// refusedHandshake requires a handshake to fail (not hang) and the server
// log to say why for that connection, naming the token and saying there
// is no software fallback.
func (r *rig) refusedHandshake(t *testing.T) string {
	t.Helper()
	_, client, err := handshake(r.srv.Addr, r.cfg)
	if err == nil {
		t.Fatalf("a handshake succeeded while the host key could not sign")
	}
	if strings.Contains(err.Error(), "hung") {
		t.Fatalf("handshake during the signing fault: %v", err)
	}
	var why string
	testenv.WaitUntil(t, func() bool {
		why = refusalLine(linesWith(r.lb.String(), "remote="+client), r.tok.Label)
		return why != ""
	})
	if why == "" {
		t.Errorf("the server log does not name the token %q and the missing fallback for the refused connection from %s", r.tok.Label, client)
	}
	return "client: " + err.Error() + "; server: " + why
}

// linesWith returns the lines of s that contain sub.
func linesWith(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestInjectHostKeyDeviceRemoved: the host key's token answers every
// signature with CKR_DEVICE_REMOVED. New handshakes fail closed with a log
// line naming the token; an established session keeps transferring; one
// that re-exchanges keys during the fault (and so needs a signature) is
// disconnected rather than left hanging; cleared, handshakes succeed again
// without a restart.
func TestInjectHostKeyDeviceRemoved(t *testing.T) {
	r := newRig(t, "tf-inj-host", rigOptions{hostKey: true})
	if _, _, err := handshake(r.srv.Addr, r.cfg); err != nil {
		t.Fatalf("handshake before the fault: %v", err)
	}
	rekeying := *r.cfg
	rekeying.RekeyThreshold = rekeyEvery
	plain, openPlain := r.gated(t, 1, r.cfg)
	rekey, openRekey := r.gated(t, 1, &rekeying)
	r.inject(t, pkcs11faults.Fault{Calls: []string{"sign"}, Code: pkcs11faults.CKRDeviceRemoved})
	why := r.refusedHandshake(t)
	openPlain()
	openRekey()
	kept := plain[0].wait(t)
	if kept != "completed" {
		t.Errorf("established session without a rekey: %s, want it to keep going", kept)
	}
	rekeyed := rekey[0].wait(t)
	if !strings.HasPrefix(rekeyed, "ended") {
		t.Errorf("session re-exchanging keys while the host key cannot sign: %s, want a disconnect", rekeyed)
	}
	up := r.p.Health()[0].Up
	r.f.Clear()
	if _, _, err := handshake(r.srv.Addr, r.cfg); err != nil {
		t.Fatalf("handshake after the fault was cleared: %v", err)
	}
	r.mustRoundTrip(t, "after the fault was cleared", 1<<20)
	t.Logf("RESULT host key, CKR_DEVICE_REMOVED on signing, no failover: new handshake refused (%s); "+
		"established session %s; session rekeying during the fault %s; token health up=%v (its probe answers); "+
		"cleared: handshakes with the same host key succeed, no restart", why, kept, rekeyed, up)
}

// TestInjectHostKeyFailover: the same host key on a second token named as
// the first's failover; every call on the first token's slot fails with
// CKR_DEVICE_REMOVED. Handshakes keep succeeding with the same host key,
// signed on the failover token; cleared, the first token is reattached.
func TestInjectHostKeyFailover(t *testing.T) {
	requirePKCS11(t)
	f := &pkcs11faults.Injector{}
	fs := startFailoverServer(t, "tf-inj", f)
	back, lb, p, srv, cfg := fs.back, fs.lb, fs.p, fs.srv, fs.cfg
	gate := make(chan struct{})
	established := startTransfer(srv.Addr, cfg, injectSize, 3, gate)
	<-established.half

	if _, err := f.Inject(pkcs11faults.Fault{Calls: []string{"all"}, Code: pkcs11faults.CKRDeviceRemoved,
		Slots: []uint{p.Tokens()[0].SlotID}}); err != nil {
		t.Fatal(err)
	}
	d, _, err := handshake(srv.Addr, cfg)
	if err != nil {
		t.Fatalf("handshake with the primary token failing: %v, want the failover token to sign", err)
	}
	if logCount(lb, "signing on the failover token") == 0 {
		t.Errorf("the server log does not say the host key signed on the failover token")
	}
	close(gate)
	kept := established.wait(t)
	if kept != "completed" {
		t.Errorf("established session: %s", kept)
	}
	waitHealth(t, p, 0, false)
	f.Clear()
	waitHealth(t, p, 0, true)
	if _, _, err := handshake(srv.Addr, cfg); err != nil {
		t.Fatalf("handshake after the primary token came back: %v", err)
	}
	t.Logf("RESULT host key with failover, CKR_DEVICE_REMOVED on every call of the primary's slot: new handshake completed "+
		"in %v with the same host key signed on %s (logged); established session %s; primary marked down, "+
		"cleared: reattached by the probe (%d recoveries), handshakes complete", d.Round(time.Millisecond), back.Label,
		kept, p.Health()[0].Recoveries)
}

// TestInjectLatency: 50-200 ms latency spikes on the token's signatures
// and on 30 of its AES-GCM calls, with the host key and bulk on the token,
// while three sessions transfer. Sessions slow down but complete intact
// and stay on the token; handshakes complete, later by the spike.
func TestInjectLatency(t *testing.T) {
	r := newRig(t, "tf-inj-slow", rigOptions{hostKey: true, bulk: true})
	trs, open := r.gated(t, injectSessions, r.cfg)
	r.inject(t, pkcs11faults.Fault{Calls: []string{"sign"}, Delay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond})
	r.inject(t, pkcs11faults.Fault{Calls: []string{"bulk"}, Delay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond, Times: 30})
	start := time.Now()
	open()
	slowest := concurrentHandshakes(t, r, 3)
	kept := outcomes(t, "latency spikes", trs)
	took := time.Since(start)
	switch {
	case slowest < 50*time.Millisecond:
		t.Errorf("the slowest handshake took %v while every signature was delayed by at least 50ms", slowest)
	case r.f.Injected("bulk") != 30:
		t.Errorf("%d AES-GCM calls delayed, want all 30 spikes spent", r.f.Injected("bulk"))
	case logCount(r.lb, inGoLog) != 0 || !r.p.Health()[0].Up:
		t.Errorf("latency made AEADs leave the token or the token go down: %d fallbacks, health %+v",
			logCount(r.lb, inGoLog), r.p.Health()[0])
	}
	r.f.Clear()
	t.Logf("RESULT latency spikes 50-200ms on signing and on 30 AES-GCM calls: %s in %v, none left the token; "+
		"3 concurrent new handshakes completed, slowest %v; token stayed up", kept, took.Round(time.Millisecond),
		slowest.Round(time.Millisecond))
}

// concurrentHandshakes runs n handshakes at once, requires each to
// succeed and returns the slowest one's duration.
func concurrentHandshakes(t *testing.T, r *rig, n int) time.Duration {
	t.Helper()
	var mu sync.Mutex
	var slowest time.Duration
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, _, err := handshake(r.srv.Addr, r.cfg)
			if err != nil {
				t.Errorf("handshake during latency spikes: %v", err)
			}
			mu.Lock()
			slowest = max(slowest, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return slowest
}
