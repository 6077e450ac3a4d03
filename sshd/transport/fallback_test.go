package transport

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
)

// fallingGCM is a "device" AES-GCM that falls back (to the same Go
// AES-GCM, so the bytes do not change) on its second seal, and says so to
// its FallbackNotifier as a token AEAD does.
type fallingGCM struct {
	cipher.AEAD
	mu    sync.Mutex
	seals int
	f     func(nonce []byte, err error)
}

func (g *fallingGCM) OnFallback(f func(nonce []byte, err error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.f = f
}

func (g *fallingGCM) Seal(dst, nonce, plaintext, ad []byte) []byte {
	g.mu.Lock()
	if g.seals++; g.seals == 2 && g.f != nil {
		g.f(nonce, errors.New("device: gone"))
	}
	g.mu.Unlock()
	return g.AEAD.Seal(dst, nonce, plaintext, ad)
}

type fallingProvider struct{}

func (fallingProvider) Name() string        { return "falling" }
func (fallingProvider) Kind() provider.Kind { return provider.KindHardware }
func (fallingProvider) Close() error        { return nil }
func (fallingProvider) Capabilities() []provider.Capability {
	return []provider.Capability{{Algorithm: "aes128-gcm", Ops: provider.OpSeal | provider.OpOpen}}
}
func (fallingProvider) NewAEAD(_ *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(b)
	return &fallingGCM{AEAD: a}, err
}

// TestTokenFallbackNamesThePacket: when the packet cipher's device falls
// back mid-connection, the connection's log says so with the direction
// and the sequence number of the packet it fell back on: the second
// packet written under the keys the key-exchange line says apply from
// seq_out.
func TestTokenFallbackNamesThePacket(t *testing.T) {
	reg := provider.New(provider.Config{Policy: provider.Policy{Pins: map[string]string{"aes128-gcm": "falling"}}})
	for _, p := range []provider.Provider{fallingProvider{}, software.New()} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { reg.Close() })
	var logs logBuffer
	ts := newTestServer(t, &Config{Registry: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c, _ := ts.dial(t, clientConfig("curve25519-sha256", "aes128-gcm@openssh.com", "", ""))
	defer c.Close()
	kexLine := regexp.MustCompile(`key exchange done.* seq_out=(\d+)`)
	fellLine := regexp.MustCompile(`token fallback.* direction=out seq=(\d+)`)
	var kex, fell []string
	if !testenv.WaitUntil(t, func() bool {
		kex, fell = kexLine.FindStringSubmatch(logs.String()), fellLine.FindStringSubmatch(logs.String())
		return kex != nil && fell != nil
	}) {
		t.Fatalf("no key exchange or fallback line:\n%s", logs.String())
	}
	from, _ := strconv.Atoi(kex[1])
	if seq, _ := strconv.Atoi(fell[1]); seq != from+1 {
		t.Errorf("fallback at seq %d, want %d (the second packet from seq_out=%d):\n%s", seq, from+1, from, logs.String())
	}
}

// notingGCM records what the transport tells it of its packets, as an
// AEAD served through the monitor does (OriginNoter).
type notingGCM struct {
	cipher.AEAD
	conn  uint64
	dir   string
	seq   uint32
	nonce []byte
}

func (n *notingGCM) NoteOrigin(conn uint64, dir string, seq uint32, nonce []byte) {
	n.conn, n.dir, n.seq, n.nonce = conn, dir, seq, nonce
}

type notingProvider struct{ made *notingGCM }

func (*notingProvider) Name() string        { return "noting" }
func (*notingProvider) Kind() provider.Kind { return provider.KindHardware }
func (*notingProvider) Close() error        { return nil }
func (*notingProvider) Capabilities() []provider.Capability {
	return []provider.Capability{{Algorithm: "aes128-gcm", Ops: provider.OpSeal | provider.OpOpen}}
}
func (p *notingProvider) NewAEAD(_ *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(b)
	p.made = &notingGCM{AEAD: a}
	return p.made, err
}

// TestOriginNoted: an AEAD served in another process is told, through
// the registry's wrapper, the connection, the direction, and the
// sequence number and nonce of the first packet under its keys.
func TestOriginNoted(t *testing.T) {
	np := &notingProvider{}
	reg := provider.New(provider.Config{})
	if err := reg.Register(np); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	a, err := reg.AEAD("aes128-gcm", make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	g := &gcmCipher{aead: a}
	g.nonce[11] = 7
	c := &Conn{id: 9, log: slog.New(slog.DiscardHandler)}
	c.watchFallback(g, "out", 41)
	n := np.made
	if n.conn != 9 || n.dir != "out" || n.seq != 41 || !bytes.Equal(n.nonce, g.nonce[:]) {
		t.Fatalf("noted conn %d, direction %q, seq %d, nonce %x; want 9, out, 41, %x", n.conn, n.dir, n.seq, n.nonce, g.nonce)
	}
}
