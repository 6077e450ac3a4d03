package connection

import (
	"fmt"

	"github.com/offload/offload/sshd/wire"
)

// open handles SSH_MSG_CHANNEL_OPEN.
func (m *mux) open(p []byte) error {
	o, err := parseOpen(p)
	if err != nil {
		return protoErr(-1, err, "malformed CHANNEL_OPEN")
	}
	m.mu.Lock()
	handler, reason, why := m.admit(o)
	var c *channel
	if handler != nil {
		c = m.newChannelID(o)
		if o.kind == "session" {
			m.sessions++
		}
		if o.kind == "session" || m.handler != nil {
			c.reqs = make(chan requestMsg, maxQueuedRequests)
		}
	}
	m.mu.Unlock()
	if handler == nil {
		m.log.Info("connection: channel open refused", "type", trunc(o.kind), "reason", why)
		m.ctl.send(appendOpenFailure(nil, o.sender, reason, why))
		return nil
	}
	extra := append([]byte(nil), o.extra...)
	m.goSafe(o.kind, c, func() { m.runChannel(c, handler, extra) })
	return nil
}

// channelHandler serves one channel; extra is the open message's
// type-specific data. It returns when the channel is done with, and the
// mux then sends EOF and CLOSE.
type channelHandler func(c *channel, extra []byte)

// admit decides whether a channel may be opened.
func (m *mux) admit(o openMsg) (channelHandler, uint32, string) {
	if len(m.chans) >= m.cfg.MaxChannels {
		return nil, openResourceShortage, "too many channels"
	}
	if o.maxPacket == 0 {
		return nil, openConnectFailed, "maximum packet size 0"
	}
	if m.handler != nil {
		return m.handler, 0, ""
	}
	switch o.kind {
	case "session":
		return m.admitSession()
	case "direct-tcpip":
		if why := m.forwardingRefusal(m.cfg.AllowTCPForwarding, "AllowTcpForwarding"); why != "" {
			return nil, openAdminProhibited, why
		}
		return m.serveDirectTCPIP, 0, ""
	case "direct-streamlocal@openssh.com":
		return m.serveDirectStreamLocal, 0, "" // refusals there, worded as OpenSSH's
	}
	return nil, openUnknownType, "unknown channel type"
}

func (m *mux) admitSession() (channelHandler, uint32, string) {
	switch {
	case m.noMoreSessions:
		return nil, openAdminProhibited, "no more sessions (no-more-sessions@openssh.com)"
	case m.cfg.MaxSessions < 0 || m.sessions >= m.cfg.MaxSessions:
		return nil, openAdminProhibited, "too many sessions (MaxSessions)"
	}
	return m.serveSession, 0, ""
}

// newChannelID registers a channel under a fresh local number.
func (m *mux) newChannelID(o openMsg) *channel {
	for !m.freeID(m.nextID) {
		m.nextID++
	}
	c := newChannel(m, m.nextID, o)
	m.chans[c.id] = c
	m.nextID++
	m.idleSince.Store(0)
	return c
}

// freeID reports whether id is used by no channel, open or opening.
func (m *mux) freeID(id uint32) bool { return m.chans[id] == nil && m.opening[id] == nil }

// OpenError is returned when the peer refused a channel we opened.
type OpenError struct {
	Kind   string
	Reason uint32
	Msg    string
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("connection: peer refused %s channel (reason %d): %s", e.Kind, e.Reason, e.Msg)
}

// openChannel opens a channel to the peer (forwarded-tcpip, x11, agent)
// and waits for its answer. extra is the type-specific data.
func (m *mux) openChannel(kind string, extra []byte) (*channel, error) {
	m.mu.Lock()
	if len(m.chans)+len(m.opening) >= m.cfg.MaxChannels {
		m.mu.Unlock()
		return nil, refuse(kind, "too many channels")
	}
	for !m.freeID(m.nextID) {
		m.nextID++
	}
	c := newChannel(m, m.nextID, openMsg{kind: kind})
	m.nextID++
	c.confirmed = make(chan error, 1)
	m.opening[c.id] = c
	m.idleSince.Store(0)
	m.mu.Unlock()
	b := append([]byte{wire.MsgChannelOpen}, wire.AppendString(nil, kind)...)
	b = wire.AppendUint32(b, c.id)
	b = wire.AppendUint32(b, m.cfg.window)
	b = wire.AppendUint32(b, m.cfg.maxPacket)
	m.ctl.send(append(b, extra...))
	select {
	case err := <-c.confirmed:
		if err != nil {
			return nil, err
		}
		return c, nil
	case <-c.ctx.Done(): // the connection ends
		return nil, ErrClosed
	}
}

// openReply handles OPEN_CONFIRMATION and OPEN_FAILURE for a channel we
// opened.
func (m *mux) openReply(p []byte) error {
	r := wire.NewReader(p[1:])
	id := r.Uint32("recipient channel")
	m.mu.Lock()
	c := m.opening[id]
	if c != nil {
		delete(m.opening, id)
	}
	m.mu.Unlock()
	if c == nil {
		return protoErr(int64(id), nil, "open answer for a channel we did not open")
	}
	if p[0] == wire.MsgChannelOpenFailure {
		reason, msg := r.Uint32("reason"), r.String("description")
		r.String("language")
		c.confirmed <- &OpenError{Kind: c.kind, Reason: reason, Msg: trunc(msg)}
		c.cancel()
		m.mu.Lock()
		m.noteIdle()
		m.mu.Unlock()
		return nil
	}
	remote, window, maxp := r.Uint32("sender channel"), r.Uint32("window"), r.Uint32("maximum packet")
	if r.Err() != nil || maxp == 0 {
		return protoErr(int64(id), r.Err(), "malformed OPEN_CONFIRMATION")
	}
	c.mu.Lock()
	c.remote, c.outWindow, c.peerMax = remote, window, min(maxp, sendChunk)
	if c.pace != nil {
		c.pace = newPacer(window)
	}
	c.mu.Unlock()
	m.mu.Lock()
	m.chans[c.id] = c
	m.mu.Unlock()
	c.confirmed <- nil
	return nil
}

// runChannel runs a handler, which confirms or refuses the channel, and
// closes the channel after a confirmed handler returns.
func (m *mux) runChannel(c *channel, h channelHandler, extra []byte) {
	h(c, extra)
	c.Close()
}

// confirm sends OPEN_CONFIRMATION; handlers call it before any data.
func (c *channel) confirm() error {
	b := appendOpenConfirm(nil, c.remote, c.id, c.m.cfg.window, c.m.cfg.maxPacket)
	c.confirmedSent.Store(true)
	return c.sendControl(b)
}

// abort ends a channel whose handler failed (panicked): refused when it
// was not confirmed yet, else killed and closed.
func (c *channel) abort() {
	if c.confirmed == nil && !c.confirmedSent.Load() {
		c.openFail(openConnectFailed, "internal error")
		return
	}
	c.kill()
	c.m.ctl.do(func() { c.Close() })
}

// openFail refuses the channel and frees its number.
func (c *channel) openFail(reason uint32, why string) {
	c.m.log.Info("connection: channel open refused", "type", c.kind, "reason", why)
	c.sendMu.Lock()
	c.sentClose = true // nothing else may be sent for this channel
	c.closing.Store(true)
	c.m.pc.WritePacket(appendOpenFailure(nil, c.remote, reason, why))
	c.sendMu.Unlock()
	c.cancel()
	c.m.mu.Lock()
	c.m.free(c)
	c.m.mu.Unlock()
}
