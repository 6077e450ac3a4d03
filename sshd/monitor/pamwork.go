package monitor

import (
	"errors"
	"net/netip"
	"sync"

	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/wire"
)

// Requests that may wait in PAM (a password or keyboard-interactive
// decision, an answer to PAM's prompts) are bounded apart from the rest:
// a PAM module that hangs keeps its thread until it returns, past the
// end of the connection (a C call cannot be interrupted), where OpenSSH
// kills the per-connection process. Without a bound of their own, such
// requests filled a worker's request slots and every other login, even
// by public key from another address, was refused as "monitor busy".
// Now at most maxPAMWork of them wait at once, at most maxPAMWorkSource
// for one client address; beyond that a request is refused at once (the
// client is disconnected: "authentication unavailable"), and they never
// take the slots of other requests.
const (
	maxPAMWork       = 128
	maxPAMWorkSource = 16
)

var errPAMBusy = errors.New("monitor: too many authentications waiting for PAM")

// pamWork counts the requests that may be waiting in PAM.
type pamWork struct {
	mu    sync.Mutex
	total int
	src   map[netip.Addr]int
}

func (p *pamWork) take(src netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total >= maxPAMWork || p.src[src] >= maxPAMWorkSource {
		return false
	}
	if p.src == nil {
		p.src = map[netip.Addr]int{}
	}
	p.total++
	p.src[src]++
	return true
}

func (p *pamWork) give(src netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total--
	if p.src[src]--; p.src[src] <= 0 {
		delete(p.src, src)
	}
}

// mayWaitInPAM reports whether msg, of entry e, is a request of worker c
// that may wait in PAM, and the client address of its connection.
func (m *Monitor) mayWaitInPAM(c *child, e *entry, msg *ipc.Message) (netip.Addr, bool) {
	if e.pam == nil {
		return netip.Addr{}, false
	}
	r := wire.NewReader(msg.Payload)
	id := r.Uint64("conn id")
	if !e.pam(r) || r.Err() != nil {
		return netip.Addr{}, false // malformed: refused by the handler
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	conn := m.conns[id]
	if conn == nil || conn.owner != c {
		return netip.Addr{}, false
	}
	return addrOf(conn.remote), true
}

// pamRequest serves a request that may wait in PAM on a goroutine of its
// own, within the bounds; it reports false when msg is not one.
func (c *child) pamRequest(e *entry, msg *ipc.Message) bool {
	src, ok := c.m.mayWaitInPAM(c, e, msg)
	if !ok {
		return false
	}
	if !c.m.pam.take(src) {
		c.m.log.Warn("monitor: authentication refused: too many waiting for PAM", "proc", c.name, "remote_ip", src.String(),
			"max", maxPAMWork, "max_per_source", maxPAMWorkSource)
		e.wipe(msg)
		c.peer.Reply(msg, nil, errPAMBusy)
		return true
	}
	go func() {
		defer c.m.pam.give(src)
		out, err := c.m.serve(c, e, msg)
		c.peer.Reply(msg, out, err)
	}()
	return true
}
