package monitor

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"log/slog"
	"regexp"
	"sync"
	"testing"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/remote"
	"github.com/offload/offload/sshd/transport"
)

// fallingGCM is a token's AES-GCM that falls back (to the same Go
// AES-GCM) on its second seal and says so, as a token AEAD does.
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

type fallingToken struct{}

func (fallingToken) Name() string        { return "falling" }
func (fallingToken) Kind() provider.Kind { return provider.KindHardware }
func (fallingToken) Close() error        { return nil }
func (fallingToken) Capabilities() []provider.Capability {
	return []provider.Capability{{Algorithm: "aes128-gcm", Ops: provider.OpSeal | provider.OpOpen, Flags: provider.FlagHardware}}
}
func (fallingToken) NewAEAD(_ *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(b)
	return &fallingGCM{AEAD: a}, err
}

// TestTokenFallbackInMonitorNamesThePacket: when the token AEAD the
// monitor holds for a post-auth process falls back, the monitor's line
// names the connection, the direction and the sequence number of the
// packet, from what the process's transport told it of the AEAD's
// packets (aead-origin), as the process's own fallback lines do.
func TestTokenFallbackInMonitorNamesThePacket(t *testing.T) {
	reg := provider.New(provider.Config{})
	if err := reg.Register(fallingToken{}); err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	logs := &sshtest.LogBuffer{}
	m := &Monitor{cfg: Config{Registry: reg, Plan: plan.Plan{Postauth: []plan.Assignment{{Primitive: "aes128-gcm", Provider: "falling", Where: plan.InMonitor}}}},
		log: slog.New(slog.NewTextHandler(logs, nil)), table: newTable()}
	c := newChild(m, ipc.RolePostauth, "test")
	conn := connIn(c, stageHanded)
	conn.id = 9
	m.conns = map[uint64]*mconn{9: conn}
	proc := childPeer(t, c)
	rp := &remote.Provider{Peer: proc, ProvName: "falling", Algorithms: []string{"aes128-gcm"}}
	a, err := rp.NewAEAD(provider.MustLookup("aes128-gcm"), make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	nonce := make([]byte, 12)
	binary.BigEndian.PutUint64(nonce[4:], 1000) // the first packet under the keys: seq 41
	a.(transport.OriginNoter).NoteOrigin(9, "out", 41, nonce)
	for range 2 {
		if _, err := provider.Seal(a, nil, nonce, []byte("packet"), nil); err != nil {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint64(nonce[4:], binary.BigEndian.Uint64(nonce[4:])+1)
	}
	want := regexp.MustCompile(`token fallback.* proc=test conn=9 direction=out seq=42 handle=\d+ nonce_counter=1001 `)
	if !logs.Await(t, "token fallback") || !want.MatchString(logs.String()) {
		t.Fatalf("the monitor's fallback line does not name the connection and the packet (%v):\n%s", want, logs)
	}
}

// childPeer connects c's monitor side to a peer standing for its process.
func childPeer(t *testing.T, c *child) *ipc.Peer {
	t.Helper()
	parent, childEnd, err := ipc.Pair()
	if err != nil {
		t.Fatal(err)
	}
	if c.peer, err = ipc.NewPeer(parent, c.handle); err != nil {
		t.Fatal(err)
	}
	proc, err := ipc.NewPeer(childEnd, func(*ipc.Message) {})
	if err != nil {
		t.Fatal(err)
	}
	go c.peer.Run()
	go proc.Run()
	t.Cleanup(func() {
		proc.Close()
		c.peer.Close()
		c.aeads.CloseAll()
	})
	return proc
}
