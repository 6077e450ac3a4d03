//go:build cgo && !nopkcs11

package pipeline

import (
	"sync"
	"testing"
	"time"

	"github.com/miekg/pkcs11"

	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/testenv"
	ourpkcs11 "github.com/offload/offload/providers/pkcs11"
)

// TestTwoTokens moves data both ways at once over one connection whose
// AES-GCM is pipelined over two SoftHSM tokens, in the server's process
// and through the monitor, and checks every byte and that both tokens
// carried the connection.
func TestTwoTokens(t *testing.T) {
	tok := openTokens(t, 2, 4)
	tok.setDelay(t, 200*time.Microsecond)
	reg := tok.registry(t)
	for _, path := range []string{"inprocess", "monitor"} {
		t.Run(path, func(t *testing.T) {
			r := reg
			if path == "monitor" {
				r = throughMonitor(t, reg)
			}
			srv := startServer(t, r, 0)
			c := srv.dial(t, gcm)
			both(t, c, 2<<20)
			for _, h := range tok.p.Health() {
				if h.InUse == 0 {
					t.Errorf("token %s carried none of the connection's lanes", h.Token.Label)
				}
			}
			c.cl.Close()
		})
	}
}

// both uploads and downloads n bytes at once.
func both(t *testing.T, c *client, n int) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.push(n); err != nil {
			t.Error(err)
		}
	}()
	if err := c.pull(uint64(n)); err != nil {
		t.Error(err)
	}
	wg.Wait()
}

// TestTokenLostMidTransfer: one of the two tokens goes away while packets
// are in flight on it. Its lanes move to the other token (or finish in Go
// with the same key), and the transfer goes on intact.
func TestTokenLostMidTransfer(t *testing.T) {
	tok := openTokens(t, 2, 4)
	tok.setDelay(t, 200*time.Microsecond)
	srv := startServer(t, tok.registry(t), 0)
	c := srv.dial(t, gcm)
	both(t, c, 1<<20) // lanes on both tokens
	slot := tok.p.Tokens()[1].SlotID
	id, err := tok.faults.Inject(pkcs11faults.Fault{Calls: []string{"all"}, Code: pkcs11.CKR_DEVICE_REMOVED, Slots: []uint{slot}})
	if err != nil {
		t.Fatal(err)
	}
	both(t, c, 2<<20)
	tok.faults.Remove(id)
}

// TestTokenLostNoFallback: with fallback off, a token lost under a
// pipelined connection ends that connection; the client never sees a
// wrong byte (each transfer is checked whole), and the server goes on.
func TestTokenLostNoFallback(t *testing.T) {
	tok := openTokensWith(t, 1, ourpkcs11.Config{AEADLanes: 4, NoFallback: true})
	tok.setDelay(t, 200*time.Microsecond)
	srv := startServer(t, tok.registry(t), 0)
	c := srv.dial(t, gcm)
	both(t, c, 512<<10)
	id, err := tok.faults.Inject(pkcs11faults.Fault{Calls: []string{"Encrypt", "Decrypt"}, Code: pkcs11.CKR_DEVICE_REMOVED})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.pull(4 << 20) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the download completed with the token gone and fallback off")
		}
	case <-testenv.Timeout(t):
		t.Fatal("the connection did not end after the token was lost")
	}
	tok.faults.Remove(id)
	c2 := srv.dial(t, gcm)
	both(t, c2, 256<<10)
}
