package monitor

import (
	"crypto/cipher"
	"errors"
	"fmt"
	"sync"

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

// aeads are the AEADs the monitor holds for one post-auth process, whose
// packet cipher the policy puts on a provider only the monitor has.
type aeads struct {
	mu   sync.Mutex
	next uint32
	m    map[uint32]cipher.AEAD
}

func (a *aeads) add(c cipher.AEAD) (uint32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[uint32]cipher.AEAD{}
	}
	if len(a.m) >= maxAEADs {
		return 0, errTooMany
	}
	a.next++
	a.m[a.next] = c
	return a.next, nil
}

func (a *aeads) get(h uint32) cipher.AEAD {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[h]
}

func (a *aeads) remove(h uint32) {
	a.mu.Lock()
	c := a.m[h]
	delete(a.m, h)
	a.mu.Unlock()
	if c != nil {
		provider.Release(c)
	}
}

// closeAll releases every AEAD (the process has ended).
func (a *aeads) closeAll() {
	a.mu.Lock()
	m := a.m
	a.m = nil
	a.mu.Unlock()
	for _, c := range m {
		provider.Release(c)
	}
}

// newAEAD makes an AEAD from the monitor's registry for post-auth
// process c.
func (m *Monitor) newAEAD(c *child, p []byte) ([]byte, error) {
	req, err := ipc.ParseAEADNew(p)
	if err != nil {
		return nil, err
	}
	if _, ok := m.cfg.Transport.Remote[req.Alg]; !ok || m.cfg.Registry == nil {
		return nil, errNotRemote
	}
	a, err := m.cfg.Registry.AEAD(req.Alg, req.Key)
	if err != nil {
		return nil, err
	}
	h, err := c.aeads.add(a)
	if err != nil {
		provider.Release(a)
		return nil, err
	}
	return (&ipc.AEADHandle{Handle: h}).Marshal(), nil
}

// aeadCall seals or opens one packet for post-auth process c.
func (m *Monitor) aeadCall(c *child, t ipc.Type, p []byte) (out []byte, err error) {
	req, err := ipc.ParseAEADCall(p)
	if err != nil {
		return nil, err
	}
	a := c.aeads.get(req.Handle)
	if a == nil {
		return nil, errNoAEAD
	}
	if len(req.Nonce) != a.NonceSize() {
		return nil, fmt.Errorf("monitor: nonce of %d bytes, want %d", len(req.Nonce), a.NonceSize())
	}
	if t == ipc.TypeAEADSeal {
		return provider.Seal(a, nil, req.Nonce, req.Data, req.AD) // a device fault is an error, not a panic
	}
	if out, err = provider.Open(a, nil, req.Nonce, req.Data, req.AD); err != nil {
		return nil, errAEADFailed
	}
	return out, nil
}
