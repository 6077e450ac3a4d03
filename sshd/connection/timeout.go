package connection

import (
	"time"

	"github.com/offload/offload/sshd/match"
	"github.com/offload/offload/sshd/wire"
)

// timeoutTypes maps channel types to the names ChannelTimeout uses.
var timeoutTypes = map[string]string{
	"session":                           "session",
	"direct-tcpip":                      "direct-tcpip",
	"direct-streamlocal@openssh.com":    "direct-streamlocal@openssh.com",
	"forwarded-tcpip":                   "forwarded-tcpip",
	"forwarded-streamlocal@openssh.com": "forwarded-streamlocal@openssh.com",
	"x11":                               "x11-connection",
	"auth-agent@openssh.com":            "agent-connection",
}

// channelTimeout is the ChannelTimeout of a channel type: the first
// matching entry's, as OpenSSH ("global" is not matched by patterns). A
// session also answers to OpenSSH 9's names once it started, sub being
// "session:shell", "session:command" or "session:subsystem:NAME", so
// configurations written for either version work.
func (s *settings) channelTimeout(kind, sub string) time.Duration {
	name, ok := timeoutTypes[kind]
	if !ok {
		return 0
	}
	for _, t := range s.ChannelTimeouts {
		if t.Type != "global" && (match.Glob(name, t.Type) || sub != "" && match.Glob(sub, t.Type)) {
			return t.Timeout
		}
	}
	return 0
}

// sessionStarted sets a session channel's timeout by its OpenSSH 9 name.
func (c *channel) sessionStarted(sub string) {
	if len(c.m.cfg.ChannelTimeouts) > 0 {
		c.timeout.Store(int64(c.m.cfg.channelTimeout(c.kind, sub)))
	}
}

// globalTimeout is the "global" ChannelTimeout, 0 for none.
func (s *settings) globalTimeout() time.Duration {
	for _, t := range s.ChannelTimeouts {
		if t.Type == "global" {
			return t.Timeout
		}
	}
	return 0
}

// minTick bounds how often the timeout watcher looks.
const minTick = 50 * time.Millisecond

// startTimeouts watches channel inactivity (ChannelTimeout) and a
// connection without channels (UnusedConnectionTimeout). Activity is
// counted per data message, without reading the clock on the data path;
// the watcher compares the counts every quarter of the shortest timeout.
func (m *mux) startTimeouts() {
	tick := m.cfg.UnusedConnectionTimeout
	for _, t := range m.cfg.ChannelTimeouts {
		if t.Timeout > 0 && (tick <= 0 || t.Timeout < tick) {
			tick = t.Timeout
		}
	}
	if tick <= 0 {
		return
	}
	tick = max(tick/4, minTick)
	m.wg.Go(func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		w := &idleWatch{seen: map[*channel]idleMark{}}
		for {
			select {
			case <-m.ctx.Done():
				return
			case now := <-t.C:
				m.checkTimeouts(w, now)
			}
		}
	})
}

// idleWatch is the watcher's memory: each channel's last count and when
// it changed, and the same for all channels together.
type idleWatch struct {
	seen       map[*channel]idleMark
	total      uint64
	totalSince time.Time
}

type idleMark struct {
	count uint32
	since time.Time
}

func (m *mux) checkTimeouts(w *idleWatch, now time.Time) {
	if d := m.cfg.UnusedConnectionTimeout; d > 0 {
		if since := m.idleSince.Load(); since != 0 && now.Sub(time.Unix(0, since)) >= d {
			m.log.Info("connection: closing unused connection", "remote", m.remoteString(), "after", d)
			pe := &ProtocolError{Reason: wire.DisconnectByApplication, Channel: -1, Msg: "unused connection timeout"}
			m.ctl.fail(pe)
			m.disconnect(pe)
			return
		}
	}
	m.mu.Lock()
	chans := make([]*channel, 0, len(m.chans))
	for _, c := range m.chans {
		chans = append(chans, c)
	}
	m.mu.Unlock()
	var total uint64
	live := map[*channel]bool{}
	for _, c := range chans {
		live[c] = true
		n := c.activity.Load()
		total += uint64(n)
		mark, ok := w.seen[c]
		if !ok || mark.count != n {
			w.seen[c] = idleMark{n, now}
			continue
		}
		if d := time.Duration(c.timeout.Load()); d > 0 && now.Sub(mark.since) >= d {
			m.expire(c, d)
		}
	}
	for c := range w.seen {
		if !live[c] {
			delete(w.seen, c)
		}
	}
	m.checkGlobal(w, chans, total, now)
}

// checkGlobal closes every channel when none had traffic for the
// "global" timeout.
func (m *mux) checkGlobal(w *idleWatch, chans []*channel, total uint64, now time.Time) {
	g := m.cfg.globalTimeout()
	if g <= 0 || len(chans) == 0 {
		w.totalSince = now
		return
	}
	if total != w.total || w.totalSince.IsZero() {
		w.total, w.totalSince = total, now
		return
	}
	if now.Sub(w.totalSince) >= g {
		for _, c := range chans {
			m.expire(c, g)
		}
		w.totalSince = now
	}
}

// expire closes an inactive channel: its handlers end (a session's
// program sees its streams close, see reap) and it is closed.
func (m *mux) expire(c *channel, after time.Duration) {
	if c.closing.Load() {
		return
	}
	m.log.Info("connection: closing inactive channel", "channel", c.id, "type", c.kind, "after", after)
	c.kill()
	m.ctl.do(func() { c.Close() })
}
