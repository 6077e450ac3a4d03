package provider_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
)

// laneAEAD is Go's AES-GCM as one lane of a FanOut: it counts its calls
// and how many run at once, can be made to wait at a gate, fail, or say
// it was released.
type laneAEAD struct {
	cipher.AEAD
	inside, peak *atomic.Int32 // shared by the lanes of one test
	gate         chan struct{} // when set, each call waits for a token from it
	fail         error
	closed       atomic.Bool
	calls        atomic.Int32
}

func newLane(t testing.TB, key []byte, inside, peak *atomic.Int32) *laneAEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := cipher.NewGCM(block)
	return &laneAEAD{AEAD: g, inside: inside, peak: peak}
}

func (l *laneAEAD) enter() {
	l.calls.Add(1)
	n := l.inside.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	if l.gate != nil {
		<-l.gate
	}
}

func (l *laneAEAD) exit() { l.inside.Add(-1) }

func (l *laneAEAD) SealErr(dst, nonce, pt, ad []byte) ([]byte, error) {
	l.enter()
	defer l.exit()
	if l.fail != nil {
		return nil, l.fail
	}
	return l.AEAD.Seal(dst, nonce, pt, ad), nil
}

func (l *laneAEAD) OpenErr(dst, nonce, ct, ad []byte) ([]byte, error) {
	l.enter()
	defer l.exit()
	out, err := l.AEAD.Open(dst, nonce, ct, ad)
	if err != nil {
		return nil, fmt.Errorf("lane: %w", provider.ErrAuthentication)
	}
	return out, nil
}

func (l *laneAEAD) Seal(dst, nonce, pt, ad []byte) []byte {
	out, err := l.SealErr(dst, nonce, pt, ad)
	if err != nil {
		panic(err)
	}
	return out
}

func (l *laneAEAD) Open(dst, nonce, ct, ad []byte) ([]byte, error) {
	return l.OpenErr(dst, nonce, ct, ad)
}

func (l *laneAEAD) Close() error {
	if l.closed.Swap(true) {
		return errors.New("lane closed twice")
	}
	return nil
}

func (l *laneAEAD) Provenance() provider.Provenance {
	return provider.Provenance{Algorithm: "aes128-gcm", Provider: "test", Token: "unit0"}
}

// lanePool makes lanes for one FanOut and records them.
type lanePool struct {
	t            testing.TB
	key          []byte
	inside, peak atomic.Int32
	mu           sync.Mutex
	lanes        []*laneAEAD
	gate         chan struct{}
	growErr      error
	grows        atomic.Int32
}

func (p *lanePool) lane() *laneAEAD {
	l := newLane(p.t, p.key, &p.inside, &p.peak)
	l.gate = p.gate
	p.mu.Lock()
	p.lanes = append(p.lanes, l)
	p.mu.Unlock()
	return l
}

func (p *lanePool) grow() (cipher.AEAD, error) {
	p.grows.Add(1)
	if p.growErr != nil {
		return nil, p.growErr
	}
	return p.lane(), nil
}

func newPool(t testing.TB) *lanePool {
	return &lanePool{t: t, key: bytes.Repeat([]byte{3}, 16)}
}

func nonceOf(i int) []byte {
	n := make([]byte, 12)
	binary.BigEndian.PutUint64(n[4:], uint64(i))
	return n
}

// sealInBackground starts n seals through f, each on its own goroutine.
func sealInBackground(f *provider.FanOut, n int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f.Seal(nil, nonceOf(i), []byte("x"), nil) })
	}
	return &wg
}

// TestFanOutMatchesGo: concurrent seals and opens through a FanOut give
// exactly Go's AES-GCM output for every message.
func TestFanOutMatchesGo(t *testing.T) {
	pool := newPool(t)
	f, err := provider.NewFanOut([]cipher.AEAD{pool.lane()}, 4, pool.grow)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref := newLane(t, pool.key, new(atomic.Int32), new(atomic.Int32)).AEAD
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := nonceOf(g*1000 + i)
				msg := []byte(fmt.Sprintf("message %d of goroutine %d", i, g))
				ct, err := f.SealErr(nil, n, msg, []byte("ad"))
				if err != nil || !bytes.Equal(ct, ref.Seal(nil, n, msg, []byte("ad"))) {
					t.Errorf("seal %d/%d differs from Go's (err %v)", g, i, err)
					return
				}
				pt, err := f.OpenErr(nil, n, ct, []byte("ad"))
				if err != nil || !bytes.Equal(pt, msg) {
					t.Errorf("open %d/%d: %q %v", g, i, pt, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if f.Active() > 4 || f.Lanes() != 4 {
		t.Errorf("Active %d, Lanes %d; want at most 4 and 4", f.Active(), f.Lanes())
	}
	forged := f.Seal(nil, nonceOf(1), []byte("x"), nil)
	forged[0] ^= 1
	if _, err := f.OpenErr(nil, nonceOf(1), forged, nil); !errors.Is(err, provider.ErrAuthentication) {
		t.Errorf("forged message: %v, want ErrAuthentication", err)
	}
}

// TestFanOutRunsInParallel: with a limit of 3, three calls are inside
// their lanes at the same moment; a fourth waits for one of them.
func TestFanOutRunsInParallel(t *testing.T) {
	pool := newPool(t)
	pool.gate = make(chan struct{})
	f, _ := provider.NewFanOut([]cipher.AEAD{pool.lane()}, 3, pool.grow)
	defer f.Close()
	wg := sealInBackground(f, 4)
	deadline := time.Now().Add(5 * time.Second)
	for pool.inside.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // room for a fourth to get in, wrongly
	if got := pool.inside.Load(); got != 3 {
		t.Fatalf("%d calls inside lanes at once, want 3", got)
	}
	for range 4 {
		pool.gate <- struct{}{}
	}
	wg.Wait()
	if f.Active() != 3 || pool.grows.Load() != 2 {
		t.Errorf("%d lanes after %d grows, want 3 after 2", f.Active(), pool.grows.Load())
	}
}

// TestFanOutGrowsOneAtATime: callers that find every lane busy while a
// lane is being built wait for a lane rather than build more at once, so
// each new lane's placement sees the ones before it.
func TestFanOutGrowsOneAtATime(t *testing.T) {
	pool := newPool(t)
	pool.gate = make(chan struct{})
	building := make(chan struct{})
	var inGrow, peak atomic.Int32
	grow := func() (cipher.AEAD, error) {
		n := inGrow.Add(1)
		defer inGrow.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-building
		return pool.grow()
	}
	f, _ := provider.NewFanOut([]cipher.AEAD{pool.lane()}, 4, grow)
	defer f.Close()
	wg := sealInBackground(f, 4)
	waitUntil(t, func() bool { return pool.inside.Load() == 1 && inGrow.Load() >= 1 })
	time.Sleep(20 * time.Millisecond) // room for a wrong second build
	close(building)
	for range 4 {
		pool.gate <- struct{}{}
	}
	wg.Wait()
	if p := peak.Load(); p != 1 {
		t.Errorf("%d lanes built at once, want 1", p)
	}
}

// TestFanOutGrowsOnlyUnderLoad: calls one after another never take a
// second lane.
func TestFanOutGrowsOnlyUnderLoad(t *testing.T) {
	pool := newPool(t)
	f, _ := provider.NewFanOut([]cipher.AEAD{pool.lane()}, 8, pool.grow)
	defer f.Close()
	for i := range 100 {
		f.Seal(nil, nonceOf(i), []byte("x"), nil)
	}
	if f.Active() != 1 || pool.grows.Load() != 0 {
		t.Errorf("%d lanes, %d grows for serial calls; want 1 and 0", f.Active(), pool.grows.Load())
	}
}

// TestFanOutGrowFailure: a lane that cannot be built leaves the calls to
// the lanes there are, and is not tried again at once.
func TestFanOutGrowFailure(t *testing.T) {
	pool := newPool(t)
	pool.gate = make(chan struct{})
	first := pool.lane()
	pool.growErr = errors.New("pool exhausted")
	f, _ := provider.NewFanOut([]cipher.AEAD{first}, 4, pool.grow)
	defer f.Close()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.Seal(nil, nonceOf(i), []byte("x"), nil)
		}()
		switch i {
		case 0:
			waitUntil(t, func() bool { return pool.inside.Load() == 1 })
		case 1: // its attempt has failed before the third caller comes
			waitUntil(t, func() bool { return f.GrowError() != nil })
		}
	}
	waitUntil(t, func() bool { return pool.grows.Load() >= 1 })
	time.Sleep(20 * time.Millisecond) // room for a wrong second attempt
	for range 3 {
		pool.gate <- struct{}{}
	}
	wg.Wait()
	if f.Active() != 1 || !errors.Is(f.GrowError(), pool.growErr) {
		t.Errorf("Active %d, GrowError %v", f.Active(), f.GrowError())
	}
	if n := pool.grows.Load(); n != 1 {
		t.Errorf("%d attempts to grow within the retry interval, want 1", n)
	}
	if first.calls.Load() != 3 {
		t.Errorf("first lane served %d calls, want 3", first.calls.Load())
	}
}

// TestFanOutClose: Close waits for a call in flight, releases every lane
// once, and later calls fail with ErrClosed.
func TestFanOutClose(t *testing.T) {
	pool := newPool(t)
	pool.gate = make(chan struct{})
	f, _ := provider.NewFanOut([]cipher.AEAD{pool.lane(), pool.lane()}, 2, nil)
	started := make(chan struct{})
	go func() {
		close(started)
		f.Seal(nil, nonceOf(1), []byte("x"), nil)
	}()
	<-started
	for pool.inside.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error)
	go func() { closed <- f.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned with a call in flight")
	case <-time.After(20 * time.Millisecond):
	}
	pool.gate <- struct{}{}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for i, l := range pool.lanes {
		if !l.closed.Load() {
			t.Errorf("lane %d not released", i)
		}
	}
	if _, err := f.SealErr(nil, nonceOf(2), []byte("x"), nil); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("SealErr after Close: %v", err)
	}
	if _, err := f.Open(nil, nonceOf(2), make([]byte, 17), nil); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("Open after Close: %v", err)
	}
	if f.Close() != nil {
		t.Error("second Close failed")
	}
}

// TestFanOutLaneFault: a lane's fault reaches the caller of SealErr.
func TestFanOutLaneFault(t *testing.T) {
	pool := newPool(t)
	l := pool.lane()
	l.fail = errors.New("device removed")
	f, _ := provider.NewFanOut([]cipher.AEAD{l}, 1, nil)
	defer f.Close()
	if _, err := f.SealErr(nil, nonceOf(1), []byte("x"), nil); !errors.Is(err, l.fail) {
		t.Errorf("SealErr: %v, want the lane's fault", err)
	}
}

func TestFanOutBadLanes(t *testing.T) {
	if _, err := provider.NewFanOut(nil, 2, nil); err == nil {
		t.Error("FanOut of no lanes accepted")
	}
	pool := newPool(t)
	block, _ := aes.NewCipher(pool.key)
	short, _ := cipher.NewGCMWithTagSize(block, 12)
	if _, err := provider.NewFanOut([]cipher.AEAD{pool.lane(), short}, 2, nil); err == nil {
		t.Error("FanOut of lanes with different tags accepted")
	}
}

// TestLanesThroughRegistry: a plain AEAD has one lane, and the registry's
// wrapper reports its provider's.
func TestLanesThroughRegistry(t *testing.T) {
	reg := provider.New(provider.Config{})
	defer reg.Close()
	reg.Register(&fanProvider{lanes: 5})
	a, err := reg.AEAD("aes128-gcm", make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Release(a)
	if n := provider.Lanes(a); n != 5 {
		t.Errorf("registry AEAD has %d lanes, want 5", n)
	}
	block, _ := aes.NewCipher(make([]byte, 16))
	g, _ := cipher.NewGCM(block)
	if n := provider.Lanes(g); n != 1 {
		t.Errorf("Go's GCM has %d lanes, want 1", n)
	}
}

// fanProvider serves aes128-gcm as FanOuts of Go's GCM.
type fanProvider struct{ lanes int }

func (*fanProvider) Name() string        { return "fan" }
func (*fanProvider) Kind() provider.Kind { return provider.KindHardware }
func (*fanProvider) Close() error        { return nil }
func (*fanProvider) Capabilities() []provider.Capability {
	return []provider.Capability{{Algorithm: "aes128-gcm", Ops: provider.OpSeal | provider.OpOpen}}
}

func (p *fanProvider) NewAEAD(_ *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	mk := func() (cipher.AEAD, error) {
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(block)
	}
	first, err := mk()
	if err != nil {
		return nil, err
	}
	return provider.NewFanOut([]cipher.AEAD{first}, p.lanes, mk)
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	if !testenv.WaitUntil(t, cond) {
		t.Fatal("condition not reached before the deadline")
	}
}
