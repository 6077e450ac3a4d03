//go:build cgo && !nopkcs11

package pkcs11

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsm"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// lanesOf returns the single-session AEADs behind a.
func lanesOf(a cipher.AEAD) []*gcm {
	switch v := a.(type) {
	case *gcm:
		return []*gcm{v}
	case *gcmLanes:
		var out []*gcm
		for _, m := range v.Members() {
			out = append(out, m.(*gcm))
		}
		return out
	}
	return nil
}

// twoTokens opens a provider over two fresh SoftHSM tokens, unit0 and unit1.
func twoTokens(t *testing.T, cfg Config) *Provider {
	t.Helper()
	t1 := softhsm.NewToken(t, softhsm.WithLabel("unit0"))
	softhsm.NewToken(t, softhsm.WithLabel("unit1"))
	cfg.ModulePath, cfg.PINSource = t1.Module, t1.PINFile
	cfg.Tokens = []*uri.URI{{Token: "unit0"}, {Token: "unit1"}}
	if cfg.HealthInterval == 0 {
		cfg.HealthInterval = -1
	}
	p, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// goGCM is Go's AES-GCM under key, the reference.
func goGCM(t *testing.T, key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := cipher.NewGCM(block)
	return g
}

// hammer seals and opens n messages from each of g goroutines at once,
// checking every output against Go's AES-GCM.
func hammer(t *testing.T, a cipher.AEAD, ref cipher.AEAD, g, n int) []error {
	var wg sync.WaitGroup
	errs := make([]error, g)
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				nonce := make([]byte, 12)
				binary.BigEndian.PutUint32(nonce[4:], uint32(w))
				binary.BigEndian.PutUint32(nonce[8:], uint32(i))
				msg := bytes.Repeat([]byte{byte(w), byte(i)}, 700+i)
				ct, err := provider.Seal(a, nil, nonce, msg, nonce[:4])
				if err != nil {
					errs[w] = err
					return
				}
				if !bytes.Equal(ct, ref.Seal(nil, nonce, msg, nonce[:4])) {
					t.Errorf("goroutine %d message %d: ciphertext differs from Go's AES-GCM", w, i)
					return
				}
				if pt, err := provider.Open(a, nil, nonce, ct, nonce[:4]); err != nil || !bytes.Equal(pt, msg) {
					t.Errorf("goroutine %d message %d: open %v", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

// TestAEADLanes: one AEAD with overlapping calls takes up to AEADLanes
// sessions, spread over both tokens, produces Go's output throughout,
// and gives every session back on Close; calls one at a time keep one.
func TestAEADLanes(t *testing.T) {
	f := &pkcs11faults.Injector{}
	p := twoTokens(t, Config{Faults: f})
	key := bytes.Repeat([]byte{5}, 16)
	a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), key)
	if err != nil {
		t.Fatal(err)
	}
	if provider.Lanes(a) != DefaultAEADLanes {
		t.Fatalf("Lanes %d, want %d", provider.Lanes(a), DefaultAEADLanes)
	}
	ref := goGCM(t, key)
	hammer(t, a, ref, 1, 20)
	if n := len(lanesOf(a)); n != 1 {
		t.Fatalf("calls one at a time took %d sessions", n)
	}
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Encrypt", "Decrypt"}, Delay: 2 * time.Millisecond})
	for _, err := range hammer(t, a, ref, 8, 10) {
		if err != nil {
			t.Fatal(err)
		}
	}
	per := map[string]int{}
	for _, g := range lanesOf(a) {
		per[g.tok.label()]++
	}
	if per["unit0"] != 2 || per["unit1"] != 2 {
		t.Errorf("lanes went %v, want 2 on each token", per)
	}
	provider.Release(a)
	for _, h := range p.Health() {
		if h.InUse != 0 {
			t.Errorf("token %s: %d sessions in use after Close", h.Token.Label, h.InUse)
		}
	}
	if _, err := provider.Seal(a, nil, make([]byte, 12), []byte("x"), nil); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("SealErr after Close: %v", err)
	}
}

// TestAEADLanesLeaveASession: lanes never take the session a pool keeps
// for signatures.
func TestAEADLanesLeaveASession(t *testing.T) {
	f := &pkcs11faults.Injector{}
	p, _ := open(t, "lanes-reserve", Config{MaxSessions: 3, Faults: f})
	key := make([]byte, 16)
	a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), key)
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Encrypt", "Decrypt"}, Delay: time.Millisecond})
	hammer(t, a, goGCM(t, key), 6, 5)
	if n := len(lanesOf(a)); n != 2 {
		t.Errorf("%d lanes in a pool of 3, want 2 (one session kept for signatures)", n)
	}
}

// TestAEADLanesTokenLost: one token goes away under an AEAD with lanes
// on both and calls in flight: its lanes move to the other token, and
// every message still comes out as Go's AES-GCM makes it.
func TestAEADLanesTokenLost(t *testing.T) {
	f := &pkcs11faults.Injector{}
	p := twoTokens(t, Config{Faults: f})
	key := bytes.Repeat([]byte{6}, 32)
	a, err := p.NewAEAD(provider.MustLookup("aes256-gcm"), key)
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	ref := goGCM(t, key)
	delay := mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Encrypt", "Decrypt"}, Delay: time.Millisecond})
	hammer(t, a, ref, 8, 4)
	unit1 := p.Tokens()[1].SlotID
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"all"}, Code: pkcs11.CKR_DEVICE_REMOVED, Slots: []uint{unit1}})
	for _, err := range hammer(t, a, ref, 8, 10) {
		if err != nil {
			t.Fatal(err)
		}
	}
	f.Remove(delay)
	for _, g := range lanesOf(a) {
		if g.FellBack() {
			continue // finished in Go with the same key: also Go's output
		}
		if l := g.tok.label(); l != "unit0" {
			t.Errorf("a lane still on %s after it was lost", l)
		}
	}
}

// TestAEADLanesNoFallback: with fallback off, a token lost under lanes
// is an error from SealErr, never a wrong ciphertext.
func TestAEADLanesNoFallback(t *testing.T) {
	f := &pkcs11faults.Injector{}
	p, _ := open(t, "lanes-nofb", Config{Faults: f, NoFallback: true})
	key := make([]byte, 16)
	a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), key)
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Encrypt", "Decrypt"}, Delay: time.Millisecond})
	hammer(t, a, goGCM(t, key), 4, 3)
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"all"}, Code: pkcs11.CKR_DEVICE_REMOVED})
	failed := 0
	for _, err := range hammer(t, a, goGCM(t, key), 4, 3) {
		if err != nil {
			failed++
		}
	}
	if failed != 4 {
		t.Errorf("%d of 4 goroutines saw the token's loss, want all", failed)
	}
}

// TestAEADLanesOne: AEADLanes 1 is one session per AEAD, as before.
func TestAEADLanesOne(t *testing.T) {
	p, _ := open(t, "lanes-one", Config{AEADLanes: 1})
	a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	if _, ok := a.(*gcm); !ok || provider.Lanes(a) != 1 {
		t.Errorf("AEADLanes 1 gave %T with %d lanes", a, provider.Lanes(a))
	}
}

// TestAEADLanesLeaveRoom: one busy connection's extra lanes leave a
// quarter of the pool to other connections, whose AEADs still get a
// session on the token.
func TestAEADLanesLeaveRoom(t *testing.T) {
	f := &pkcs11faults.Injector{}
	p, _ := open(t, "lanes-room", Config{MaxSessions: 8, AEADLanes: 8, Faults: f})
	key := make([]byte, 16)
	alg := provider.MustLookup("aes128-gcm")
	a, err := p.NewAEAD(alg, key)
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	// 10 ms a call, so that the 12 callers overlap even on a loaded
	// machine under the race detector (at 1 ms, CI once saw 2 lanes).
	mustFail(t, f, pkcs11faults.Fault{Calls: []string{"Encrypt", "Decrypt"}, Delay: 10 * time.Millisecond})
	hammer(t, a, goGCM(t, key), 12, 4)
	if n := len(lanesOf(a)); n != 5 {
		t.Errorf("a busy AEAD took %d sessions of 8, want 5 (one kept for signatures, two for other connections)", n)
	}
	for i := range 2 {
		b, err := p.NewAEAD(alg, key)
		if err != nil {
			t.Fatalf("another connection's AEAD %d: %v", i, err)
		}
		defer provider.Release(b)
	}
	if _, err := p.NewAEAD(alg, key); !errors.Is(err, ErrPoolExhausted) {
		t.Errorf("an AEAD beyond the pool: %v, want ErrPoolExhausted", err)
	}
}
