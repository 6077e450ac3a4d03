package connection

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// mux is the state of one connection.
type mux struct {
	pc    wire.PacketConn
	cfg   *settings
	perm  *perm.Permissions
	log   *slog.Logger
	addrs Addrs
	ctx   context.Context

	mu             sync.Mutex // guards chans and sessions
	chans          map[uint32]*channel
	nextID         uint32
	sessions       int
	noMoreSessions bool
	wg             sync.WaitGroup // handler goroutines
	ctl            *ctlQueue
	lastRead       atomic.Int64 // unix nanos of the last packet, for keepalive
	probes         atomic.Int32 // unanswered keepalives
	rtt            roundTrip    // the round trip at the SSH layer (autowindow.go)
	acct           accountOnce
	discOnce       sync.Once
	handler        channelHandler      // replaces all channel types when set (tests)
	batch          bool                // pc is a wire.ReadWaiter: sinks may hold data (sink.go)
	held           *channel            // the channel holding data for its sink; read loop only
	opening        map[uint32]*channel // channels we opened, awaiting the peer's answer
	fwd            forwards            // listeners for the peer (listen.go)
	agent          agentState          // the forwarded agent's socket (agent.go)
	authInfo       authInfoFile        // SSH_USER_AUTH (authinfo.go)
	idleSince      atomic.Int64        // unix nanos the last channel closed; 0 while channels are open
	procs          procSession         // Config.OpenHeldPAMSession's, opened on first use
	qosOnce        sync.Once           // IPQoS, set by the first session (qos.go)
}

// Serve runs the connection protocol on pc for the user p authenticated
// as. It returns nil when the peer disconnects, a *ProtocolError when the
// peer broke the protocol (after sending DISCONNECT when pc is a
// wire.Disconnector), or the context's error. Before returning it closes
// all channels, kills and reaps all child processes and closes pc.
func Serve(ctx context.Context, pc wire.PacketConn, p *perm.Permissions, cfg *Config) error {
	return serve(ctx, pc, p, cfg, nil)
}

// serve is Serve with an optional handler replacing the channel types
// (for fuzzing without starting programs).
func serve(ctx context.Context, pc wire.PacketConn, p *perm.Permissions, cfg *Config, h channelHandler) error {
	if p == nil {
		p = &perm.Permissions{}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := &mux{pc: pc, cfg: cfg.settings(), perm: p, ctx: ctx, chans: map[uint32]*channel{},
		opening: map[uint32]*channel{}, addrs: addrsFrom(ctx, pc), handler: h}
	m.idleSince.Store(nowNano())
	m.log = m.cfg.Logger.With("user", p.User)
	m.ctl = newCtlQueue(pc)
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	if rw, ok := pc.(wire.ReadWaiter); ok {
		rw.OnReadWait(m.flushHeld)
		m.batch = true
	}
	m.startKeepalive()
	m.startRoundTrip()
	m.announceHostKeys()
	m.startTimeouts()
	err := m.safeLoop()
	return m.finish(ctx, cancel, err)
}

// safeLoop is loop under recover: a bug that panics on some input ends
// this connection with an error, not the process.
func (m *mux) safeLoop() (err error) {
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("connection: panic in the read loop", "panic", r, "stack", string(debug.Stack()))
			err = &ProtocolError{Reason: wire.DisconnectByApplication, Channel: -1, Msg: "internal error"}
		}
	}()
	return m.loop()
}

// goSafe runs f in a handler goroutine under recover: a panic ends the
// channel c (when not nil) and is logged; the connection goes on.
func (m *mux) goSafe(what string, c *channel, f func()) {
	m.wg.Go(func() {
		defer func() {
			if r := recover(); r != nil {
				m.log.Error("connection: panic in a handler", "handler", what, "panic", r, "stack", string(debug.Stack()))
				if c != nil {
					c.abort()
				}
			}
		}()
		f()
	})
}

// disconnect sends DISCONNECT (once) when pc can, and closes pc.
func (m *mux) disconnect(pe *ProtocolError) {
	m.discOnce.Do(func() {
		m.log.Warn("connection: disconnecting peer", "err", pe)
		if d, ok := m.pc.(wire.Disconnector); ok {
			d.Disconnect(pe.Reason, pe.Msg)
		}
		m.pc.Close()
	})
}

// finish tears the connection down and picks the error to return.
func (m *mux) finish(ctx context.Context, cancel context.CancelFunc, err error) error {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		m.disconnect(pe)
	}
	ctxErr := ctx.Err()
	cancel()
	m.pc.Close()
	m.mu.Lock()
	for _, c := range m.chans {
		c.kill()
	}
	for _, c := range m.opening {
		c.kill()
	}
	m.mu.Unlock()
	m.fwd.closeAll()
	m.agent.close()
	m.authInfo.close()
	m.ctl.close()
	m.wg.Wait()
	m.closeHeldPAMSession()
	switch {
	case pe != nil:
		return pe
	case ctxErr != nil:
		return fmt.Errorf("connection: %w", ctxErr)
	case err == nil || errors.Is(err, io.EOF):
		return nil
	}
	return fmt.Errorf("connection: read: %w", err)
}

// loop reads and dispatches packets until an error.
func (m *mux) loop() error {
	for {
		p, err := m.pc.ReadPacket()
		if m.held != nil && (err != nil || !m.continuesHeld(p)) {
			m.flushHeld()
		}
		if err != nil {
			var pe *ProtocolError
			if errors.As(m.ctl.err(), &pe) { // why the connection was cut
				return pe
			}
			return err
		}
		m.lastRead.Store(nowNano())
		if len(p) == 0 {
			return protoErr(-1, nil, "empty packet")
		}
		if err := m.dispatch(p); err != nil {
			return err
		}
		if err := m.ctl.err(); err != nil {
			return err
		}
	}
}

// continuesHeld reports whether p is more data for the channel holding
// data, which may join it.
func (m *mux) continuesHeld(p []byte) bool {
	id, ok := channelID(p)
	return ok && p[0] == wire.MsgChannelData && id == m.held.id
}

// flushHeld writes the data the held channel collected (sink.go).
func (m *mux) flushHeld() {
	c := m.held
	if c == nil {
		return
	}
	m.held = nil
	c.mu.Lock()
	c.flushLocked()
	adj := c.takeAdjustLocked()
	c.mu.Unlock()
	if adj > 0 {
		m.ctl.send(appendWindowAdjust(nil, c.remote, adj))
	}
}

func (m *mux) dispatch(p []byte) error {
	switch t := p[0]; {
	case t == wire.MsgGlobalRequest:
		return m.globalRequest(p)
	case t == wire.MsgRequestSuccess || t == wire.MsgRequestFailure:
		m.probes.Store(0)
		m.rtt.answered(nowNano())
		return nil
	case t == wire.MsgChannelOpen:
		return m.open(p)
	case t == wire.MsgChannelOpenConfirm || t == wire.MsgChannelOpenFailure:
		return m.openReply(p)
	case t >= wire.MsgChannelWindowAdjust && t <= wire.MsgChannelFailure:
		return m.channelMsg(p)
	case t >= wire.MsgUserAuthRequest && t < wire.MsgGlobalRequest:
		return nil // late auth messages are ignored
	case !wire.Known(t):
		return m.unimplemented(t)
	}
	return protoErr(-1, nil, "unexpected message %d", p[0])
}

// unimplemented answers a message number no specification defines (and
// the local-extension range) with SSH_MSG_UNIMPLEMENTED, as RFC 4253
// §11.4 requires, when the transport can.
func (m *mux) unimplemented(t byte) error {
	u, ok := m.pc.(wire.Unimplementer)
	if !ok {
		return nil
	}
	m.log.Debug("connection: unknown message answered with UNIMPLEMENTED", "type", t)
	return u.Unimplemented()
}

// lookup finds the channel a message is for.
func (m *mux) lookup(p []byte) (*channel, error) {
	id, ok := channelID(p)
	if !ok {
		return nil, protoErr(-1, wire.ErrShort, "message %d without channel number", p[0])
	}
	m.mu.Lock()
	c := m.chans[id]
	m.mu.Unlock()
	if c == nil {
		return nil, protoErr(int64(id), nil, "message %d for unknown channel", p[0])
	}
	if c.gotClose {
		return nil, protoErr(int64(id), nil, "message %d after CLOSE", p[0])
	}
	return c, nil
}

func (m *mux) channelMsg(p []byte) error {
	c, err := m.lookup(p)
	if err != nil {
		return err
	}
	switch p[0] {
	case wire.MsgChannelWindowAdjust:
		return m.windowAdjust(c, p)
	case wire.MsgChannelData, wire.MsgChannelExtendedData:
		return m.data(c, p)
	case wire.MsgChannelEOF:
		return m.eof(c, p)
	case wire.MsgChannelClose:
		return m.peerClose(c, p)
	case wire.MsgChannelRequest:
		return m.channelRequest(c, p)
	case wire.MsgChannelSuccess, wire.MsgChannelFailure:
		m.probes.Store(0)
		return nil // replies to keepalives; we ask for nothing else
	}
	return protoErr(int64(c.id), nil, "unexpected message %d", p[0])
}

func (m *mux) windowAdjust(c *channel, p []byte) error {
	if len(p) != 9 {
		return protoErr(int64(c.id), wire.ErrShort, "bad WINDOW_ADJUST length %d", len(p))
	}
	n := uint64(p[5])<<24 | uint64(p[6])<<16 | uint64(p[7])<<8 | uint64(p[8])
	c.mu.Lock()
	defer c.mu.Unlock()
	if uint64(c.outWindow)+n > math.MaxUint32 {
		return protoErr(int64(c.id), nil, "window adjust %d overflows window %d", n, c.outWindow)
	}
	c.outWindow += uint32(n)
	if c.pace != nil {
		c.pace.onAdjust(uint32(n), nowNano())
	}
	c.cond.Broadcast()
	return nil
}

func (m *mux) data(c *channel, p []byte) error {
	d, ext, ok := parseData(p)
	if !ok {
		return protoErr(int64(c.id), wire.ErrShort, "malformed data message")
	}
	if uint32(len(d)) > m.cfg.maxPacket {
		// As OpenSSH: logged and dropped, the window untouched.
		m.log.Info("connection: data packet bigger than the maximum we announced dropped",
			"channel", c.id, "bytes", len(d), "max", m.cfg.maxPacket)
		return nil
	}
	if c.counting {
		c.activity.Add(1)
	}
	c.mu.Lock()
	if left := c.inWindow; uint64(len(d)) > uint64(left) {
		c.mu.Unlock()
		return protoErr(int64(c.id), nil, "%d bytes of data beyond the window (%d left)", len(d), left)
	}
	c.inWindow -= uint32(len(d))
	var adj uint32
	switch {
	case ext != 0 || c.eofIn || c.dead:
		c.consumed += uint32(len(d)) // nobody reads it: give the window back
		adj = c.takeAdjustLocked()
	case c.sinkLocked(d, m.batch):
		adj = c.takeAdjustLocked()
		if len(c.pend) > 0 {
			m.held = c
		}
	default:
		c.in.write(d)
		if c.in.len() >= maxPend {
			c.growSinkLocked()
		}
		c.cond.Broadcast()
	}
	c.mu.Unlock()
	if adj > 0 {
		m.ctl.send(appendWindowAdjust(nil, c.remote, adj))
	}
	return nil
}

func (m *mux) eof(c *channel, p []byte) error {
	if len(p) != 5 {
		return protoErr(int64(c.id), wire.ErrShort, "bad EOF length %d", len(p))
	}
	c.mu.Lock()
	c.eofIn = true
	c.cond.Broadcast()
	c.mu.Unlock()
	return nil
}

// peerClose answers the peer's CLOSE and frees the channel number.
func (m *mux) peerClose(c *channel, p []byte) error {
	if len(p) != 5 {
		return protoErr(int64(c.id), wire.ErrShort, "bad CLOSE length %d", len(p))
	}
	c.gotClose = true
	c.kill()
	// Our CLOSE goes out from the control sender: taking sendMu here could
	// wait for a data write stuck behind a key exchange that only this
	// loop can finish.
	m.ctl.do(c.sendClose)
	m.mu.Lock()
	m.free(c)
	m.mu.Unlock()
	return nil
}

// free releases a channel number; m.mu is held.
func (m *mux) free(c *channel) {
	if m.chans[c.id] != c {
		return
	}
	delete(m.chans, c.id)
	if c.kind == "session" {
		m.sessions--
	}
	m.noteIdle()
}

// noteIdle starts the unused-connection clock when no channel is left;
// m.mu is held.
func (m *mux) noteIdle() {
	if len(m.chans) == 0 && len(m.opening) == 0 {
		m.idleSince.Store(nowNano())
	}
}

func (m *mux) channelRequest(c *channel, p []byte) error {
	r, err := parseChannelRequest(p)
	if err != nil {
		return protoErr(int64(c.id), err, "malformed channel request")
	}
	switch {
	case c.closing.Load():
		return nil // in flight when we closed; the peer expects no reply
	case c.resizeInline(r):
		return nil
	case c.reqs == nil:
		if r.wantReply {
			m.ctl.send(appendChannelMsg(nil, wire.MsgChannelFailure, c.remote))
		}
		return nil
	}
	if c.reqBytes.Add(int64(len(r.payload))) > maxQueuedReqBytes {
		return protoErr(int64(c.id), nil, "more than %d bytes of channel requests pending", maxQueuedReqBytes)
	}
	select {
	case c.reqs <- r:
		return nil
	default:
		return protoErr(int64(c.id), nil, "more than %d channel requests pending", maxQueuedRequests)
	}
}
