package monitor

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/ipc"
)

// maxAEADs bounds the AEADs one post-auth process holds in the monitor:
// two per connection direction pair, with room for a re-exchange.
const maxAEADs = 8192

var (
	errNoAEAD     = errors.New("monitor: no such AEAD")
	errTooMany    = errors.New("monitor: too many AEADs for this process")
	errNotRemote  = errors.New("monitor: algorithm not served through the monitor")
	errAEADFailed = errors.New("monitor: message authentication failed")
)

// AEADServer holds the AEADs of one post-auth process whose packet
// cipher the policy puts on a provider only the monitor has (a token),
// and answers its AEADNew, AEADSeal, AEADOpen and AEADClose messages.
// Requests are served concurrently (the monitor runs each on a goroutine
// of its own): an AEAD that serves several calls at once
// (provider.ConcurrentAEAD, a token AEAD with several sessions) says so
// in its AEADCreated reply, and the process keeps that many packets in
// flight, which also hides the round trip to the monitor; the calls on
// any other AEAD are taken one at a time, whatever the process sends.
type AEADServer struct {
	// Registry builds the AEADs.
	Registry *provider.Registry
	// Remote is the algorithms served this way (the plan's Remote).
	Remote map[string]string
	// Log, when set, gets a line when an AEAD's token fails and it
	// continues in Go, naming the process, the AEAD's handle and, once
	// the process has told it (Origin), the connection and the packet.
	Log *slog.Logger

	mu   sync.Mutex
	next uint32
	m    map[uint32]*heldAEAD
}

// heldAEAD is one AEAD of the process; one is nil when its calls may run
// at once.
type heldAEAD struct {
	a      cipher.AEAD
	one    *sync.Mutex
	origin atomic.Pointer[origin] // what the process said of its packets
}

// origin is what an AEADOrigin notification said of the packets an AEAD
// protects: its connection and direction, and the sequence number of
// the packet whose GCM invocation counter is ctr.
type origin struct {
	conn uint64
	dir  string
	seq  uint32
	ctr  uint64
}

// New makes an AEAD from an AEADNew request and replies AEADCreated.
func (s *AEADServer) New(p []byte) ([]byte, error) {
	req, err := ipc.ParseAEADNew(p)
	if err != nil {
		return nil, err
	}
	if _, ok := s.Remote[req.Alg]; !ok || s.Registry == nil {
		return nil, errNotRemote
	}
	a, err := s.Registry.AEAD(req.Alg, req.Key)
	if err != nil {
		return nil, err
	}
	h := &heldAEAD{a: a}
	lanes := provider.Lanes(a)
	if lanes == 1 {
		h.one = new(sync.Mutex)
	}
	id, err := s.add(h)
	if err != nil {
		provider.Release(a)
		return nil, err
	}
	s.watchFallback(h, id)
	created := &ipc.AEADCreated{Handle: id, Lanes: uint32(lanes)}
	if pv, ok := provider.ProvenanceOf(a); ok {
		created.Token, created.Serial, created.Slot = pv.Token, pv.Serial, uint32(pv.Slot)
	}
	return created.Marshal(), nil
}

// watchFallback logs a fallback of AEAD id with the GCM invocation
// counter of the packet it fell back on and, once the process has said
// which packets the AEAD protects (Origin), the connection, the
// direction and the packet's sequence number, as the process's
// transport names its own fallbacks.
func (s *AEADServer) watchFallback(h *heldAEAD, id uint32) {
	if s.Log == nil {
		return
	}
	provider.OnFallback(h.a, func(nonce []byte, err error) {
		ctr := gcmCounter(nonce)
		var args []any
		if o := h.origin.Load(); o != nil {
			args = append(args, "conn", o.conn, "direction", o.dir, "seq", o.seq+uint32(ctr-o.ctr))
		}
		args = append(args, "handle", id, "nonce_counter", ctr, "err", err)
		s.Log.Warn("monitor: token fallback: a post-auth process's packet cipher continues in Go with the same key", args...)
	})
}

// gcmCounter is the invocation counter of an SSH AES-GCM nonce (RFC
// 5647: a 4-byte fixed field, then the counter); 0 for another size.
func gcmCounter(nonce []byte) uint64 {
	if len(nonce) != 12 {
		return 0
	}
	return binary.BigEndian.Uint64(nonce[4:])
}

// Origin records what an AEADOrigin notification says of the packets an
// AEAD protects; the table has checked that its connection is the
// process's. An AEAD already closed is no error: the notification may
// cross its AEADClose.
func (s *AEADServer) Origin(o *ipc.AEADOrigin) {
	h := s.get(o.Handle)
	if h == nil {
		return
	}
	dir := "in"
	if o.Out {
		dir = "out"
	}
	h.origin.Store(&origin{conn: o.ConnID, dir: dir, seq: o.Seq, ctr: gcmCounter(o.Nonce)})
}

func (s *AEADServer) add(h *heldAEAD) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[uint32]*heldAEAD{}
	}
	if len(s.m) >= maxAEADs {
		return 0, errTooMany
	}
	s.next++
	s.m[s.next] = h
	return s.next, nil
}

func (s *AEADServer) get(id uint32) *heldAEAD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

// Call seals (TypeAEADSeal) or opens (TypeAEADOpen) one packet.
func (s *AEADServer) Call(t ipc.Type, p []byte) ([]byte, error) {
	req, err := ipc.ParseAEADCall(p)
	if err != nil {
		return nil, err
	}
	h := s.get(req.Handle)
	if h == nil {
		return nil, errNoAEAD
	}
	if len(req.Nonce) != h.a.NonceSize() {
		return nil, fmt.Errorf("monitor: nonce of %d bytes, want %d", len(req.Nonce), h.a.NonceSize())
	}
	if h.one != nil {
		h.one.Lock()
		defer h.one.Unlock()
	}
	if t == ipc.TypeAEADSeal {
		return provider.Seal(h.a, nil, req.Nonce, req.Data, req.AD) // a device fault is an error, not a panic
	}
	out, err := provider.Open(h.a, nil, req.Nonce, req.Data, req.AD)
	if err != nil {
		return nil, errAEADFailed
	}
	return out, nil
}

// Close releases the AEAD an AEADClose notification names; an unknown
// handle is ignored.
func (s *AEADServer) Close(p []byte) {
	h, err := ipc.ParseAEADHandle(p)
	if err != nil {
		return
	}
	s.mu.Lock()
	held := s.m[h.Handle]
	delete(s.m, h.Handle)
	s.mu.Unlock()
	if held != nil {
		release(held)
	}
}

// CloseAll releases every AEAD (the process has ended).
func (s *AEADServer) CloseAll() {
	s.mu.Lock()
	m := s.m
	s.m = nil
	s.mu.Unlock()
	for _, h := range m {
		release(h)
	}
}

// release frees h once no call of it runs (calls that may run at once
// are waited for by the AEAD's own Close).
func release(h *heldAEAD) {
	if h.one != nil {
		h.one.Lock()
		defer h.one.Unlock()
	}
	provider.Release(h.a)
}

// aeadNew, aeadCall, aeadOrigin and aeadClose serve a post-auth process's AEADs.
func (m *Monitor) aeadNew(in *call) ([]byte, error) { return in.c.aeads.New(in.p) }

func (m *Monitor) aeadCall(in *call) ([]byte, error) { return in.c.aeads.Call(in.t, in.p) }

func (m *Monitor) aeadOrigin(in *call) ([]byte, error) {
	o, err := ipc.ParseAEADOrigin(in.p)
	if err != nil {
		return nil, err
	}
	in.c.aeads.Origin(o)
	return nil, nil
}

func (m *Monitor) aeadClose(in *call) ([]byte, error) {
	in.c.aeads.Close(in.p)
	return nil, nil
}
