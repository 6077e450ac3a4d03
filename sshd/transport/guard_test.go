package transport

import (
	"crypto/cipher"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
)

// brittle serves AES-GCM that panics once broken is set, the way a token
// provider with no fallback reports a device that went away.
type brittle struct {
	provider.AEADProvider
	broken *atomic.Bool
}

func (b brittle) Name() string        { return "brittle" }
func (b brittle) Kind() provider.Kind { return provider.KindHardware }
func (b brittle) Close() error        { return nil }
func (b brittle) Capabilities() []provider.Capability {
	return b.AEADProvider.(provider.Provider).Capabilities()
}

func (b brittle) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	a, err := b.AEADProvider.NewAEAD(alg, key)
	if err != nil {
		return nil, err
	}
	return brittleAEAD{AEAD: a, broken: b.broken}, nil
}

type brittleAEAD struct {
	cipher.AEAD
	broken *atomic.Bool
}

func (a brittleAEAD) Seal(dst, nonce, pt, ad []byte) []byte {
	if a.broken.Load() {
		panic("brittle: device removed")
	}
	return a.AEAD.Seal(dst, nonce, pt, ad)
}

func (a brittleAEAD) Open(dst, nonce, ct, ad []byte) ([]byte, error) {
	if a.broken.Load() {
		panic("brittle: device removed")
	}
	return a.AEAD.Open(dst, nonce, ct, ad)
}

// A cipher that panics ends its connection with a ProviderError; the
// server goes on serving the others.
func TestProviderPanicEndsOnlyThatConnection(t *testing.T) {
	f := cpu.Detect()
	if !f.AES || !f.CLMUL {
		t.Skip("needs the cpu provider's AES-GCM")
	}
	var broken atomic.Bool
	reg := provider.New(provider.Config{Policy: provider.Policy{Pins: map[string]string{"aes128-gcm": "brittle"}}})
	for _, p := range []provider.Provider{brittle{AEADProvider: cpu.New(f), broken: &broken}, software.New()} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	ts := newTestServer(t, &Config{Registry: reg})
	victim, _ := ts.dial(t, clientConfig("", "aes128-gcm@openssh.com", "", ""))
	if ok, _, err := victim.SendRequest("echo", true, []byte("x")); !ok || err != nil {
		t.Fatalf("before the fault: ok=%v err=%v", ok, err)
	}
	broken.Store(true)
	victim.SendRequest("echo", true, []byte("y")) // the server's Open panics
	victim.Wait()
	if !waitFor(func() bool { return hasProviderError(ts.connErrors()) }) {
		t.Fatalf("server errors %v, want a ProviderError", ts.connErrors())
	}
	broken.Store(false)
	healthy, _ := ts.dial(t, clientConfig("", "aes128-gcm@openssh.com", "", ""))
	if ok, r, err := healthy.SendRequest("echo", true, []byte("still here")); !ok || err != nil || string(r) != "still here" {
		t.Fatalf("a new connection after the fault: ok=%v err=%v", ok, err)
	}
}

func TestGuardedSeal(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	l := newLoopback(t, findCipher("aes128-gcm@openssh.com"), nil)
	l.w.c = &gcmCipher{aead: brittleAEAD{AEAD: l.w.c.(*gcmCipher).aead, broken: &broken}}
	err := l.w.write([]byte{94, 1, 2, 3})
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Op != "seal" || pe.Seq != 0 {
		t.Fatalf("write with a panicking cipher = %v, want a seal ProviderError", err)
	}
}

func hasProviderError(errs []error) bool {
	for _, err := range errs {
		var pe *ProviderError
		if errors.As(err, &pe) {
			return true
		}
	}
	return false
}
