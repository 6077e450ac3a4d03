package tokenfaults

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/test/hostile/harness"
)

// The tests in this file fail a token through pkcs11faults.Injector
// (Config.Faults) instead of deleting it: chosen PKCS #11 calls return a
// chosen CKR_* value, or answer late, while sessions transfer.

const (
	injectSessions = 3
	injectSize     = 4 << 20
	// handshakeTimeout bounds one handshake: a fault must never make the
	// server hang a client.
	handshakeTimeout = 15 * time.Second
	inGoLog          = "AES-GCM continues in Go"
)

// rig is a server whose PKCS #11 provider reaches its token through a
// fault injector.
type rig struct {
	tok  *softhsmtest.Token
	p    *pkcs11.Provider
	f    *pkcs11faults.Injector
	lb   *harness.LogBuffer
	m    *provider.Metrics
	srv  *harness.Server
	cfg  *ssh.ClientConfig
	slot uint
}

// rigOptions say what lives on the token.
type rigOptions struct {
	hostKey    bool // the server's only host key is an ECDSA key in the token
	bulk       bool // aes128-gcm on the token by policy prefer-hardware
	noFallback bool // token AEADs report faults instead of finishing in Go
}

func newRig(t *testing.T, label string, o rigOptions) *rig {
	t.Helper()
	requirePKCS11(t)
	r := &rig{tok: softhsmtest.NewToken(t, label), f: &pkcs11faults.Injector{}, m: provider.NewMetrics()}
	// The key goes in before this process opens the module: softhsm2-util
	// writes the token's files from another process, and SoftHSM's file
	// store can catch them half written and then fail every call on the
	// token (CKR_GENERAL_ERROR) until they change again. Seen with two
	// test binaries at once: "probe on token ...: CKR_GENERAL_ERROR".
	var pub ssh.PublicKey
	if o.hostKey {
		key, p := hostKey(t)
		r.tok.Import(t, key, "host")
		pub = p
	}
	lb, log := serverLog(t)
	r.lb = lb
	var err error
	r.p, err = pkcs11.OpenURI(r.tok.TokenURI(), pkcs11.Config{HealthInterval: healthInterval, Logger: log, Faults: r.f,
		NoFallback: o.noFallback})
	if err != nil {
		t.Fatal(err)
	}
	r.slot = r.p.Tokens()[0].SlotID
	pol := provider.Policy{}
	if o.bulk {
		pol.Mode = provider.ModePreferHardware
	}
	reg := newRegistry(t, r.p, log, r.m, pol)
	if ex, err := reg.Explain("aes128-gcm"); o.bulk && (err != nil || ex.Chosen != r.p.Name()) {
		t.Skipf("the token does not serve aes128-gcm here: %v %v", ex, err)
	}
	var hostKeys []crypto.Signer
	if o.hostKey {
		s, err := reg.Signer(context.Background(), r.tok.URI("host"))
		if err != nil {
			t.Fatal(err)
		}
		hostKeys = []crypto.Signer{s}
	}
	r.srv = startServer(t, reg, hostKeys, log)
	cipher := ""
	if o.bulk {
		cipher = gcm
	}
	r.cfg = clientConfig(r.srv, pub, cipher)
	return r
}

// inject adds a fault or fails the test.
func (r *rig) inject(t *testing.T, ft pkcs11faults.Fault) pkcs11faults.ID {
	t.Helper()
	id, err := r.f.Inject(ft)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// gated starts n transfers and waits until each is half way, paused.
func (r *rig) gated(t *testing.T, n int, cfg *ssh.ClientConfig) (trs []*transfer, open func()) {
	t.Helper()
	gate := make(chan struct{})
	for i := range n {
		trs = append(trs, startTransfer(r.srv.Addr, cfg, injectSize, uint64(i+10), gate))
	}
	for _, tr := range trs {
		<-tr.half
	}
	for _, tr := range trs {
		select {
		case <-tr.done:
			t.Fatalf("a transfer ended before the fault: %v", tr.err)
		default:
		}
	}
	return trs, closeOnce(gate)
}

// outcomes waits for every transfer and requires each to complete with
// the right checksum.
func outcomes(t *testing.T, what string, trs []*transfer) string {
	t.Helper()
	var out []string
	for i, tr := range trs {
		got := tr.wait(t)
		if got != "completed" {
			t.Errorf("%s: session %d %s, want it to complete with the same checksum", what, i, got)
		}
		out = append(out, got)
	}
	return fmt.Sprintf("%d/%d sessions %s", count(out, "completed"), len(out), "completed with matching sha256")
}

func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

// handshake dials and logs in once, within handshakeTimeout, and returns
// how long it took and the client's address. A timeout is reported as a
// hang.
func handshake(addr string, cfg *ssh.ClientConfig) (time.Duration, string, error) {
	start := time.Now()
	nc, err := net.DialTimeout("tcp", addr, handshakeTimeout)
	if err != nil {
		return 0, "", err
	}
	defer nc.Close()
	local := nc.LocalAddr().String()
	nc.SetDeadline(start.Add(handshakeTimeout))
	c, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	d := time.Since(start)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return d, local, fmt.Errorf("handshake hung for %v: %w", handshakeTimeout, err)
		}
		return d, local, err
	}
	ssh.NewClient(c, chans, reqs).Close()
	return d, local, nil
}

// mustRoundTrip requires a new connection to transfer size bytes intact.
func (r *rig) mustRoundTrip(t *testing.T, when string, size int) {
	t.Helper()
	if got := roundTrip(t, r.srv.Addr, r.cfg, size); got != "completed" {
		t.Fatalf("new connection %s: %s", when, got)
	}
}

// tokenGCM is the number of AES-GCM operations the token made.
func (r *rig) tokenGCM() uint64 { return tokenOps(r.m, r.p.Name(), "aes128-gcm") }

// TestInjectBulkSessionInvalid: CKR_SESSION_HANDLE_INVALID on the
// token's AES-GCM calls while three sessions transfer. A few faults: each
// AEAD moves its key to a fresh session and stays on the token. A fault
// that persists: the AEADs finish in Go with the same key. Either way the
// data arrives intact; cleared, new connections use the token again.
func TestInjectBulkSessionInvalid(t *testing.T) {
	r := newRig(t, "tf-inj-sess", rigOptions{bulk: true})
	trs, open := r.gated(t, injectSessions, r.cfg)
	imports, before := r.f.Calls("CreateObject"), r.tokenGCM()
	r.inject(t, pkcs11faults.Fault{Calls: []string{"bulk"}, Code: pkcs11faults.CKRSessionHandleInvalid, Times: 3})
	open()
	few := outcomes(t, "3 session faults", trs)
	moved := r.f.Calls("CreateObject") - imports
	switch {
	case r.f.Injected("bulk") != 3:
		t.Errorf("%d bulk calls failed, want the 3 injected", r.f.Injected("bulk"))
	case moved < 3:
		t.Errorf("the AES key was imported %d times after 3 session faults, want a fresh session for each", moved)
	case logCount(r.lb, inGoLog) != 0:
		t.Errorf("an AEAD left the token after faults it can recover from")
	case r.tokenGCM() <= before:
		t.Errorf("no AES-GCM on the token after the faults")
	}

	trs, open = r.gated(t, 2, r.cfg)
	r.inject(t, pkcs11faults.Fault{Calls: []string{"bulk"}, Code: pkcs11faults.CKRSessionHandleInvalid})
	open()
	persistent := outcomes(t, "persistent session faults", trs)
	inGo := logCount(r.lb, inGoLog)
	if inGo == 0 {
		t.Errorf("no AEAD reported finishing in Go under a persistent session fault")
	}
	r.mustRoundTrip(t, "during the persistent fault", 1<<20)
	r.f.Clear()
	before, inGoBefore := r.tokenGCM(), logCount(r.lb, inGoLog)
	r.mustRoundTrip(t, "after the fault was cleared", 1<<20)
	if r.tokenGCM() <= before || logCount(r.lb, inGoLog) != inGoBefore {
		t.Errorf("after Clear the new connection did not run AES-GCM on the token (%d -> %d ops, %d new fallbacks)",
			before, r.tokenGCM(), logCount(r.lb, inGoLog)-inGoBefore)
	}
	t.Logf("RESULT bulk CKR_SESSION_HANDLE_INVALID x3: %s, key re-imported %d times, none left the token; "+
		"persistent: %s, %d AEAD direction(s) finished in Go, new connection during it completed; cleared: new connection on the token",
		few, moved, persistent, inGo)
}

// TestInjectBulkDeviceRemoved: every call on the token's slot fails with
// CKR_DEVICE_REMOVED (a pulled device) while sessions transfer with bulk
// on the token. Established sessions finish in Go, new connections fall
// open to the CPU provider with a log line saying the token is
// unavailable, and once the fault is cleared the health probe reattaches
// the token by itself and new connections use it again.
func TestInjectBulkDeviceRemoved(t *testing.T) {
	r := newRig(t, "tf-inj-dev", rigOptions{bulk: true})
	trs, open := r.gated(t, injectSessions, r.cfg)
	r.inject(t, pkcs11faults.Fault{Calls: []string{"all"}, Code: pkcs11faults.CKRDeviceRemoved, Slots: []uint{r.slot}})
	open()
	kept := outcomes(t, "device removed under bulk", trs)
	waitHealth(t, r.p, 0, false)
	inGo := logCount(r.lb, inGoLog)
	if inGo == 0 {
		t.Errorf("no AEAD reported finishing in Go after the device was removed")
	}
	const fellOpen = "offering aes128-gcm unavailable"
	n := logCount(r.lb, fellOpen)
	r.mustRoundTrip(t, "with the device removed", 1<<20)
	waitLog(t, r.lb, fellOpen, n)
	if logCount(r.lb, fellOpen) == n {
		t.Errorf("the server log does not say the token is unavailable when a new connection falls open")
	}
	recoveries := r.p.Health()[0].Recoveries
	r.f.Clear()
	waitHealth(t, r.p, 0, true)
	before := r.tokenGCM()
	r.mustRoundTrip(t, "after the device came back", 1<<20)
	if r.tokenGCM() <= before {
		t.Errorf("the token did not serve a new connection after it came back")
	}
	t.Logf("RESULT bulk CKR_DEVICE_REMOVED on every call of the slot: %s (%d AEAD direction(s) finished in Go); "+
		"token marked down; new connection fell open to the CPU provider, log %q; cleared: probe reattached the token "+
		"(recoveries %d -> %d), new connection on the token", kept, inGo, fellOpen, recoveries, r.p.Health()[0].Recoveries)
}

// TestBulkNoFallbackNoPanic: with the AEAD fallback off, a token that
// fails under established transfers ends those connections with the
// provider's error — reported through provider.FallibleAEAD, not a panic
// across the provider boundary — and the server goes on serving.
func TestBulkNoFallbackNoPanic(t *testing.T) {
	r := newRig(t, "tf-nofallback", rigOptions{bulk: true, noFallback: true})
	trs, open := r.gated(t, 2, r.cfg)
	id := r.inject(t, pkcs11faults.Fault{Calls: []string{"bulk"}, Code: 0x30}) // CKR_DEVICE_ERROR
	open()
	for i, tr := range trs {
		if got := tr.wait(t); got == "completed" {
			t.Errorf("transfer %d completed with the token failing and no fallback", i)
		}
	}
	waitLog(t, r.lb, "crypto provider failed to", 0) // the server may log just after the client sees the end
	log := r.lb.String()
	if !strings.Contains(log, "crypto provider failed to") || strings.Contains(log, "panic") || strings.Contains(log, "fallback is off") {
		t.Errorf("server log: want the provider error, no panic")
	}
	if strings.Contains(log, inGoLog) {
		t.Errorf("an AEAD continued in Go with the fallback off")
	}
	r.f.Remove(id)
	if got := roundTrip(t, r.srv.Addr, r.cfg, 1<<20); got != "completed" {
		t.Errorf("new connection after the fault cleared: %s", got)
	}
}
