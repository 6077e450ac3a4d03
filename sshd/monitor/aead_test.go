package monitor

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/internal/lanetest"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/remote"
)

// remoteAEADPair serves AES-GCM from lp in a monitor to a post-auth
// process in this process, over a real socket pair and the monitor's own
// request path (child.handle); it returns the process's AEAD.
func remoteAEADPair(t testing.TB, lp *lanetest.Provider, key []byte) cipher.AEAD {
	t.Helper()
	reg, err := lp.Registry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	m := &Monitor{cfg: Config{Registry: reg, Plan: plan.Plan{Postauth: []plan.Assignment{{Primitive: "aes128-gcm", Provider: lanetest.Name, Where: plan.InMonitor}}}},
		log: slog.New(slog.DiscardHandler), table: newTable()}
	c := newChild(m, ipc.RolePostauth, "test")
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
	rp := &remote.Provider{Peer: proc, ProvName: lanetest.Name, Algorithms: []string{"aes128-gcm"}}
	a, err := rp.NewAEAD(provider.MustLookup("aes128-gcm"), key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { provider.Release(a) })
	return a
}

// sealAtOnce seals n messages from n goroutines and checks each against
// Go's AES-GCM.
func sealAtOnce(t *testing.T, a cipher.AEAD, key []byte, n int) {
	block, _ := aes.NewCipher(key)
	ref, _ := cipher.NewGCM(block)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nonce := make([]byte, 12)
			binary.BigEndian.PutUint64(nonce[4:], uint64(i))
			msg := bytes.Repeat([]byte{byte(i)}, 1000+i)
			ct, err := provider.Seal(a, nil, nonce, msg, []byte("ad"))
			if err != nil || !bytes.Equal(ct, ref.Seal(nil, nonce, msg, []byte("ad"))) {
				t.Errorf("seal %d through the monitor: %v (or a different ciphertext)", i, err)
				return
			}
			if pt, err := provider.Open(a, nil, nonce, ct, []byte("ad")); err != nil || !bytes.Equal(pt, msg) {
				t.Errorf("open %d through the monitor: %v", i, err)
			}
		}()
	}
	wg.Wait()
}

// TestRemoteAEADLanes: the monitor says how many calls its AEAD serves
// at once, and requests of the process that overlap are served at once
// (the transport pipelines packets through the monitor this way).
func TestRemoteAEADLanes(t *testing.T) {
	lp := &lanetest.Provider{Lanes: 4, Delay: 5 * time.Millisecond}
	key := bytes.Repeat([]byte{4}, 16)
	a := remoteAEADPair(t, lp, key)
	if n := provider.Lanes(a); n != 4 {
		t.Fatalf("the process's AEAD has %d lanes, want the monitor's 4", n)
	}
	sealAtOnce(t, a, key, 16)
	if lp.Peak() < 2 {
		t.Errorf("at most %d requests were served at once", lp.Peak())
	}
}

// TestRemoteAEADOneLane: an AEAD that serves one call at a time gets one
// at a time, however many requests a process (a hostile one) sends at
// once.
func TestRemoteAEADOneLane(t *testing.T) {
	lp := &lanetest.Provider{Lanes: 1, Delay: 2 * time.Millisecond}
	key := make([]byte, 16)
	a := remoteAEADPair(t, lp, key)
	if n := provider.Lanes(a); n != 1 {
		t.Fatalf("%d lanes, want 1", n)
	}
	sealAtOnce(t, a, key, 8)
	if lp.Peak() != 1 {
		t.Errorf("%d calls of a one-lane AEAD ran at once", lp.Peak())
	}
}

// BenchmarkRemoteSeal: one 1 KiB seal through the monitor's request path
// (the table, a handler goroutine, the AEAD server), as a post-auth
// process's packets go with a cipher on a token.
func BenchmarkRemoteSeal(b *testing.B) {
	key := make([]byte, 16)
	a := remoteAEADPair(b, &lanetest.Provider{Lanes: 1}, key)
	nonce, msg := make([]byte, 12), make([]byte, 1024)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := provider.Seal(a, nil, nonce, msg, nil); err != nil {
			b.Fatal(err)
		}
	}
}
