package tokenfaults

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/test/hostile/harness"
)

const (
	bulkSessions = 3
	bulkSize     = 16 << 20
	gcm          = "aes128-gcm@openssh.com"
	// bulkPool fits every AEAD of the test (two per connection) and
	// leaves sessions to spare, so that only the faults send work elsewhere.
	bulkPool = 16
)

// TestBulkPreferHardware puts aes128-gcm on the token by policy
// prefer-hardware (the CPU and software providers stay behind it as
// fail-open fallbacks), deletes the token while three sessions are half
// way through their transfers, and restores it.
func TestBulkPreferHardware(t *testing.T) {
	runBulk(t, "tf-bulk-ph", false)
}

// TestBulkPinned is the same with ProviderMap aes128-gcm=pkcs11. A pin
// leaves no other eligible provider (provider.Registry.rank), so new
// handshakes during the outage may fail closed; they must then say why.
func TestBulkPinned(t *testing.T) {
	runBulk(t, "tf-bulk-pin", true)
}

func runBulk(t *testing.T, label string, pinned bool) {
	requirePKCS11(t)
	tok := softhsmtest.NewToken(t, label)
	lb, log := serverLog(t)
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{HealthInterval: healthInterval, MaxSessions: bulkPool, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	pol := provider.Policy{Mode: provider.ModePreferHardware}
	if pinned {
		if pol.Pins, err = provider.ParsePins("aes128-gcm=" + p.Name()); err != nil {
			t.Fatal(err)
		}
	}
	metrics := provider.NewMetrics()
	reg := newRegistry(t, p, log, metrics, pol)
	if ex, err := reg.Explain("aes128-gcm"); err != nil || ex.Chosen != p.Name() {
		t.Skipf("the token does not serve aes128-gcm here: %v %v", ex, err)
	}
	srv := startServer(t, reg, nil, log)
	cfg := clientConfig(srv, nil, gcm)

	// Established sessions, paused half way.
	gate := make(chan struct{})
	var trs []*transfer
	for i := range bulkSessions {
		trs = append(trs, startTransfer(srv.Addr, cfg, bulkSize, uint64(i), gate))
	}
	for _, tr := range trs {
		<-tr.half
	}
	if tokenOps(metrics, p.Name(), "aes128-gcm") == 0 {
		t.Fatalf("no AES-GCM operations on the token before the removal")
	}

	tok.Delete(t)
	waitHealth(t, p, 0, false)
	close(gate) // the second halves go out with the token gone
	during := outageHandshake(t, lb, srv, cfg, pinned)

	var outcomes []string
	for i, tr := range trs {
		outcomes = append(outcomes, fmt.Sprintf("session %d %s", i, tr.wait(t)))
	}
	inGo := logCount(lb, "AES-GCM continues in Go")
	if inGo == 0 {
		t.Logf("no AEAD reported continuing in Go")
	}

	tok.Recreate(t)
	waitHealth(t, p, 0, true)
	before := tokenOps(metrics, p.Name(), "aes128-gcm")
	if got := roundTrip(t, srv.Addr, cfg, 4<<20); got != "completed" {
		t.Fatalf("new connection after the token came back: %s", got)
	}
	after := tokenOps(metrics, p.Name(), "aes128-gcm")
	if after <= before {
		t.Errorf("token AES-GCM operations %d -> %d: the new connection did not use the restored token", before, after)
	}
	t.Logf("bulk on token (%s), token deleted mid-transfer: %s; %d AEAD direction(s) logged continuing in Go; new handshake during the outage: %s; after restore the token served a new connection (%d -> %d token AES-GCM ops, %d recoveries)",
		policyName(pinned), strings.Join(outcomes, ", "), inGo, during, before, after, p.Health()[0].Recoveries)
}

// outageHandshake connects while the token is gone. Fail-open must serve
// the connection from another provider and log it; with a pin, a refusal
// is accepted when the server log says why.
func outageHandshake(t *testing.T, lb *harness.LogBuffer, srv *harness.Server, cfg *ssh.ClientConfig, pinned bool) string {
	t.Helper()
	const fallback, refused = "provider failed, trying the next", "offering aes128-gcm unavailable"
	fb, rf := logCount(lb, fallback), logCount(lb, refused)
	got := roundTrip(t, srv.Addr, cfg, 1<<20)
	if got != "completed" { // the server may log just after the client sees the refusal
		waitLog(t, lb, refused, rf)
	}
	fb, rf = logCount(lb, fallback)-fb, logCount(lb, refused)-rf
	switch {
	case got == "completed" && fb > 0:
		return "completed, served by another provider (fail-open logged)"
	case got == "completed":
		t.Errorf("new connection during the outage completed but the log does not say the token failed and another provider served")
	case pinned && rf > 0:
		return "refused (fail closed), server log: " + refused + "; client: " + got
	case pinned:
		t.Errorf("new connection during the outage: %s, and the server log does not say why", got)
	default:
		t.Errorf("new connection during the outage: %s, want fail-open to the CPU or software provider", got)
	}
	return got
}

func policyName(pinned bool) string {
	if pinned {
		return "pin aes128-gcm=pkcs11"
	}
	return "prefer-hardware"
}
