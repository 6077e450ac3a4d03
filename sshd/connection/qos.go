package connection

// markQoS sets the connection's type of service from Config.IPQoS, once,
// when its first session starts: the interactive value when that session
// has a pty or X11 forwarding, the bulk one otherwise (OpenSSH's
// ssh_packet_set_interactive, which later sessions do not change).
func (m *mux) markQoS(interactive bool) {
	q := m.cfg.IPQoS
	if q == nil {
		return
	}
	m.qosOnce.Do(func() {
		tos := q.Bulk
		if interactive {
			tos = q.Interactive
		}
		ts, ok := m.pc.(TOSSetter)
		if tos < 0 || !ok {
			return
		}
		if err := ts.SetTOS(tos); err != nil {
			m.log.Debug("connection: IPQoS not set", "tos", tos, "err", err)
		}
	})
}
