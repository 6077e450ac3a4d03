package connection

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
	m.wg.Go(func() { m.runChannel(c, handler, extra) })
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
		if why := m.forwardingRefusal(); why != "" {
			return nil, openAdminProhibited, why
		}
		return m.serveDirectTCPIP, 0, ""
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
	for m.chans[m.nextID] != nil {
		m.nextID++
	}
	c := newChannel(m, m.nextID, o)
	m.chans[c.id] = c
	m.nextID++
	return c
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
	return c.sendControl(b)
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
