package provider

import (
	"crypto/cipher"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ConcurrentAEAD is an AEAD that serves several calls at once: its calls
// may come from several goroutines, and up to Lanes of them proceed in
// parallel — on several sessions or units of a device, or as several
// requests in flight to another process. A caller with independent
// messages (SSH packets, whose GCM nonces come from a counter) keeps up
// to Lanes calls going to hide the device's latency and use every unit.
//
// Lanes is a capacity, not a promise: a lane the device cannot give
// (its sessions are taken) leaves the calls to the others. Lanes of 1 is
// an ordinary AEAD; Lanes reports it for any cipher.AEAD.
type ConcurrentAEAD interface {
	cipher.AEAD
	Lanes() int
}

// Lanes returns how many calls a may usefully have in flight: its Lanes
// when it is a ConcurrentAEAD, 1 otherwise. Software and CPU AEADs are 1:
// their work is the caller's own CPU, and a caller gains nothing by
// waiting on several of them at once.
func Lanes(a cipher.AEAD) int {
	if c, ok := a.(ConcurrentAEAD); ok {
		if n := c.Lanes(); n > 1 {
			return n
		}
	}
	return 1
}

// MaxLanes bounds FanOut's lanes.
const MaxLanes = 64

// growRetry is how long a FanOut waits after a lane could not be built
// before it tries to build one again.
const growRetry = time.Second

// FanOut is one key's AEAD served by several underlying AEADs with that
// key — lanes: a token session each, on one token or several. Each call
// goes to a lane that is free; when every lane is busy and there are
// fewer than the maximum, FanOut builds another with its grow function
// (so lanes are taken only when calls overlap; one at a time, so each is
// placed knowing the others), and otherwise waits for one. It is safe for concurrent use and implements ConcurrentAEAD,
// FallibleAEAD, Provenancer and io.Closer.
//
// Every lane must produce the same output for the same input (the same
// key and algorithm); a lane that moves off its device mid-life (a token
// AEAD finishing in Go) is fine for that reason.
type FanOut struct {
	nonce, overhead int
	free            chan cipher.AEAD
	done            chan struct{}
	grow            func() (cipher.AEAD, error)
	growing         sync.WaitGroup // grow calls in progress

	mu       sync.Mutex
	lanes    []cipher.AEAD
	max      int
	building chan struct{} // closed when the lane being built is done; nil when none is
	retryAt  time.Time
	growErr  error
	closed   bool
	fellBack func(nonce []byte, err error) // set by OnFallback, given to every lane
}

var (
	_ ConcurrentAEAD   = (*FanOut)(nil)
	_ FallbackNotifier = (*FanOut)(nil)
	_ FallibleAEAD     = (*FanOut)(nil)
	_ Provenancer      = (*FanOut)(nil)
)

// errFanOutClosed is returned by a FanOut's calls after Close.
var errFanOutClosed = fmt.Errorf("provider: AEAD %w", ErrClosed)

// NewFanOut serves calls over lanes (at least one, all with the same
// nonce and tag sizes), growing to at most limit lanes (up to MaxLanes)
// with grow, which may be nil for a fixed set. FanOut owns the lanes:
// Close releases them.
func NewFanOut(lanes []cipher.AEAD, limit int, grow func() (cipher.AEAD, error)) (*FanOut, error) {
	if len(lanes) == 0 || len(lanes) > MaxLanes {
		return nil, fmt.Errorf("provider: FanOut needs 1 to %d AEADs, not %d", MaxLanes, len(lanes))
	}
	limit = min(MaxLanes, max(limit, len(lanes)))
	f := &FanOut{nonce: lanes[0].NonceSize(), overhead: lanes[0].Overhead(), grow: grow, max: limit,
		free: make(chan cipher.AEAD, limit), done: make(chan struct{})}
	for _, a := range lanes {
		if a.NonceSize() != f.nonce || a.Overhead() != f.overhead {
			return nil, fmt.Errorf("provider: FanOut lanes differ: nonce %d/%d, tag %d/%d",
				a.NonceSize(), f.nonce, a.Overhead(), f.overhead)
		}
		f.lanes = append(f.lanes, a)
		f.free <- a
	}
	return f, nil
}

// NonceSize is the lanes' nonce size.
func (f *FanOut) NonceSize() int { return f.nonce }

// Overhead is the lanes' tag size.
func (f *FanOut) Overhead() int { return f.overhead }

// Lanes is the most lanes the FanOut will use.
func (f *FanOut) Lanes() int { return f.max }

// Active is the number of lanes built so far.
func (f *FanOut) Active() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.lanes)
}

// Members returns the lanes built so far (for tests and diagnostics; do
// not call them while the FanOut is in use).
func (f *FanOut) Members() []cipher.AEAD {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cipher.AEAD(nil), f.lanes...)
}

// take returns a free lane: an idle one, a new one when all are busy and
// there is room, or the first one given back. A caller that finds a lane
// being built waits for it to be done and then tries again.
func (f *FanOut) take() (cipher.AEAD, error) {
	for {
		select {
		case a := <-f.free:
			return a, nil
		default:
		}
		a, built := f.tryGrow()
		if a != nil {
			return a, nil
		}
		select {
		case a := <-f.free:
			return a, nil
		case <-built:
		case <-f.done:
			return nil, errFanOutClosed
		}
	}
}

// tryGrow builds one more lane when there is room, no other is being
// built and the last attempt did not fail recently. One at a time, so
// that each lane's placement (a token's least busy unit) sees the lanes
// before it: two built at once both saw the same counts and went to the
// same token (CI at 8a3bc37: 3 lanes on one token, 1 on the other).
// Without a lane it returns a channel closed when the lane being built
// is done (nil when none is).
func (f *FanOut) tryGrow() (cipher.AEAD, <-chan struct{}) {
	f.mu.Lock()
	if f.building != nil {
		defer f.mu.Unlock()
		return nil, f.building
	}
	if f.grow == nil || f.closed || len(f.lanes) >= f.max || time.Now().Before(f.retryAt) {
		f.mu.Unlock()
		return nil, nil
	}
	f.building = make(chan struct{})
	f.growing.Add(1)
	f.mu.Unlock()
	defer f.growing.Done()
	a, err := f.grow()
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.building)
	f.building = nil
	return f.added(a, err), nil
}

// added keeps a lane grow built, or records why there is none; f.mu is
// held.
func (f *FanOut) added(a cipher.AEAD, err error) cipher.AEAD {
	switch {
	case err == nil && (a.NonceSize() != f.nonce || a.Overhead() != f.overhead):
		err = fmt.Errorf("provider: FanOut: new lane has nonce %d, tag %d", a.NonceSize(), a.Overhead())
		Release(a)
	case err == nil && f.closed:
		Release(a)
		return nil
	}
	if err != nil {
		f.retryAt, f.growErr = time.Now().Add(growRetry), err
		return nil
	}
	f.lanes = append(f.lanes, a)
	if f.fellBack != nil {
		OnFallback(a, f.fellBack)
	}
	return a
}

// OnFallback sets fn on every lane, those built later included.
func (f *FanOut) OnFallback(fn func(nonce []byte, err error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fellBack = fn
	for _, a := range f.lanes {
		OnFallback(a, fn)
	}
}

// GrowError is why the last lane could not be built (nil when none failed).
func (f *FanOut) GrowError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.growErr
}

func (f *FanOut) put(a cipher.AEAD) { f.free <- a }

// Seal seals on a free lane. cipher.AEAD's Seal cannot fail: after Close
// it panics, as a lane that cannot seal does; use SealErr.
func (f *FanOut) Seal(dst, nonce, plaintext, additionalData []byte) []byte {
	a, err := f.take()
	if err != nil {
		panic(err.Error())
	}
	defer f.put(a)
	return a.Seal(dst, nonce, plaintext, additionalData)
}

// Open opens on a free lane.
func (f *FanOut) Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error) {
	a, err := f.take()
	if err != nil {
		return nil, err
	}
	defer f.put(a)
	return a.Open(dst, nonce, ciphertext, additionalData)
}

// SealErr is Seal returning a lane's fault, or ErrClosed, as an error.
func (f *FanOut) SealErr(dst, nonce, plaintext, additionalData []byte) ([]byte, error) {
	a, err := f.take()
	if err != nil {
		return nil, err
	}
	defer f.put(a)
	return Seal(a, dst, nonce, plaintext, additionalData)
}

// OpenErr is Open with FallibleAEAD's errors.
func (f *FanOut) OpenErr(dst, nonce, ciphertext, additionalData []byte) ([]byte, error) {
	a, err := f.take()
	if err != nil {
		return nil, err
	}
	defer f.put(a)
	return Open(a, dst, nonce, ciphertext, additionalData)
}

// Provenance is the first lane's, with the places of all lanes in Detail
// when they are on more than one token.
func (f *FanOut) Provenance() Provenance {
	f.mu.Lock()
	lanes := append([]cipher.AEAD(nil), f.lanes...)
	f.mu.Unlock()
	pv, _ := ProvenanceOf(lanes[0])
	where := map[string]int{}
	var order []string
	for _, a := range lanes {
		p, _ := ProvenanceOf(a)
		w := p.Token
		if p.Fallback {
			w += " (fallback)"
		}
		if where[w] == 0 {
			order = append(order, w)
		}
		where[w]++
		pv.Fallback = pv.Fallback || p.Fallback
	}
	if len(order) > 1 || len(lanes) > 1 {
		parts := make([]string, len(order))
		for i, w := range order {
			parts[i] = fmt.Sprintf("%d on %q", where[w], w)
		}
		d := fmt.Sprintf("%d of %d lanes: %s", len(lanes), f.max, strings.Join(parts, ", "))
		pv.Detail = strings.TrimPrefix(pv.Detail+"; "+d, "; ")
	}
	return pv
}

// Close waits for the calls in flight and the lanes being built, then
// releases every lane; later calls fail with ErrClosed. When it returns,
// grow is not running and will not be called again.
func (f *FanOut) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	close(f.done)
	n := len(f.lanes) // a lane still being built is released by tryGrow
	f.mu.Unlock()
	f.growing.Wait()
	var errs []error
	for range n {
		errs = append(errs, Release(<-f.free))
	}
	return errors.Join(errs...)
}
