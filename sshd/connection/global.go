package connection

import (
	"sync"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// maxGlobalPayload bounds a global request's data: every request we
// serve needs a few hundred bytes at most.
const maxGlobalPayload = 4096

// globalRequest answers SSH_MSG_GLOBAL_REQUEST as OpenSSH's sshd does:
// remote forwarding (tcpip-forward, streamlocal-forward@openssh.com and
// their cancels), hostkeys-prove-00@openssh.com,
// no-more-sessions@openssh.com, and REQUEST_FAILURE for
// keepalive@openssh.com and everything unknown. Replies go out in the
// order of the requests.
func (m *mux) globalRequest(p []byte) error {
	r, err := parseGlobalRequest(p)
	if err != nil {
		return protoErr(-1, err, "malformed global request")
	}
	ok, data := false, []byte(nil)
	switch {
	case r.kind == hostKeysProveRequest: // bounded by the transport
		ok, data = m.proveHostKeys(r.payload)
	case len(r.payload) > maxGlobalPayload:
		m.log.Info("connection: oversized global request refused", "type", trunc(r.kind), "bytes", len(r.payload))
	case r.kind == "tcpip-forward":
		ok, data = m.tcpipForward(r.payload, r.wantReply)
	case r.kind == "cancel-tcpip-forward":
		ok = m.cancelTCPIPForward(r.payload)
	case r.kind == "streamlocal-forward@openssh.com":
		ok = m.streamLocalForward(r.payload)
	case r.kind == "cancel-streamlocal-forward@openssh.com":
		ok = m.cancelStreamLocalForward(r.payload)
	case r.kind == "no-more-sessions@openssh.com":
		m.mu.Lock()
		m.noMoreSessions = true
		m.mu.Unlock()
		ok = true
	case r.kind == "keepalive@openssh.com":
	default:
		m.log.Debug("connection: refused global request", "type", trunc(r.kind))
	}
	if r.wantReply {
		msg := byte(wire.MsgRequestFailure)
		if ok {
			msg = wire.MsgRequestSuccess
		}
		m.ctl.send(append([]byte{msg}, data...))
	}
	return nil
}

// hostKeyUpdater is the optional capability of a PacketConn that takes
// part in OpenSSH's UpdateHostKeys (transport.Conn does): it announces
// every host key after authentication and proves possession on request.
type hostKeyUpdater interface {
	HostKeysAnnouncement() []byte
	ProveHostKeys(data []byte) ([]byte, error)
}

const hostKeysProveRequest = "hostkeys-prove-00@openssh.com"

// announceHostKeys sends hostkeys-00@openssh.com, as OpenSSH's sshd does
// once the session starts.
func (m *mux) announceHostKeys() {
	if hk, ok := m.pc.(hostKeyUpdater); ok {
		m.ctl.send(hk.HostKeysAnnouncement())
	}
}

func (m *mux) proveHostKeys(data []byte) (bool, []byte) {
	hk, ok := m.pc.(hostKeyUpdater)
	if !ok {
		return false, nil
	}
	proof, err := hk.ProveHostKeys(data)
	if err != nil {
		m.log.Debug("connection: refused host key proof", "err", err)
		return false, nil
	}
	return true, proof
}

// trunc bounds peer-supplied strings before they reach logs.
func trunc(s string) string {
	if len(s) > maxRequestTypeLen {
		return s[:maxRequestTypeLen] + "..."
	}
	return s
}

func nowNano() int64 { return time.Now().UnixNano() }

// startKeepalive probes a silent peer with keepalive@openssh.com.
func (m *mux) startKeepalive() {
	iv := m.cfg.ClientAliveInterval
	if iv <= 0 {
		return
	}
	m.lastRead.Store(nowNano())
	m.goSafe("keepalive", nil, func() {
		t := time.NewTicker(iv)
		defer t.Stop()
		for {
			select {
			case <-m.ctx.Done():
				return
			case <-t.C:
				m.probe(iv)
			}
		}
	})
}

func (m *mux) probe(iv time.Duration) {
	if time.Duration(nowNano()-m.lastRead.Load()) < iv {
		return
	}
	if n, limit := int(m.probes.Add(1)), m.cfg.ClientAliveCountMax; limit >= 0 && n > limit {
		pe := &ProtocolError{Reason: wire.DisconnectByApplication, Channel: -1, Msg: "client alive timeout"}
		m.ctl.fail(pe)
		m.disconnect(pe)
		return
	}
	m.sendKeepalive(nowNano())
}

// maxCtlQueue bounds the messages the read loop may queue for a peer
// that does not read.
const maxCtlQueue = 4096

// ctlQueue sends messages produced by the read loop from another
// goroutine, so the read loop never blocks in WritePacket (which may wait
// for a key exchange that only the read loop can finish).
type ctlQueue struct {
	pc      wire.PacketConn
	mu      sync.Mutex
	cond    sync.Cond
	q       []ctlItem
	closed  bool
	failure error
	done    chan struct{}
}

func newCtlQueue(pc wire.PacketConn) *ctlQueue {
	c := &ctlQueue{pc: pc, done: make(chan struct{})}
	c.cond.L = &c.mu
	go c.run()
	return c
}

// ctlItem is a packet to send, or a function to run in order with them.
type ctlItem struct {
	p []byte
	f func()
}

func (c *ctlQueue) send(p []byte) { c.push(ctlItem{p: p}) }

// do runs f on the sender goroutine, after what is queued.
func (c *ctlQueue) do(f func()) { c.push(ctlItem{f: f}) }

func (c *ctlQueue) push(it ctlItem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if len(c.q) >= maxCtlQueue {
		c.setFailLocked(protoErr(-1, nil, "peer does not read: %d replies queued", len(c.q)))
		return
	}
	c.q = append(c.q, it)
	c.cond.Signal()
}

func (c *ctlQueue) fail(err error) {
	c.mu.Lock()
	c.setFailLocked(err)
	c.mu.Unlock()
}

func (c *ctlQueue) setFailLocked(err error) {
	if c.failure == nil {
		c.failure = err
	}
}

// err reports a failure the read loop must act on.
func (c *ctlQueue) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failure
}

func (c *ctlQueue) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		for len(c.q) == 0 && !c.closed {
			c.cond.Wait()
		}
		if len(c.q) == 0 {
			c.mu.Unlock()
			return
		}
		it := c.q[0]
		c.q[0] = ctlItem{}
		c.q = c.q[1:]
		c.mu.Unlock()
		if it.f != nil {
			it.f()
		} else if err := c.pc.WritePacket(it.p); err != nil {
			c.fail(err)
		}
	}
}

// close flushes what is queued and stops the sender.
func (c *ctlQueue) close() {
	c.mu.Lock()
	c.closed = true
	c.cond.Signal()
	c.mu.Unlock()
	<-c.done
}
