package sshd

import (
	"errors"
	"fmt"

	"github.com/offload/offload/sshd/monitor"
	"github.com/offload/offload/sshd/transport"
)

// ErrNotSeparated is returned by Detach for a server in the in-process
// mode: its sessions live in this process and end with it.
var ErrNotSeparated = errors.New("sshd: sessions are kept only by a separated server")

// Detach stops a separated server for a restart that keeps its sessions,
// as OpenSSH's restarts do: it closes the listeners Serve accepts on,
// ends the connections still authenticating and the pre-auth workers,
// and detaches the post-auth processes that serve authenticated
// connections. The program passes the returned hand-over (nil when no
// session is left) to a process of its own that calls Keep; the
// sessions go on meanwhile. Shutdown does nothing afterwards.
func (s *Server) Detach() (*monitor.Handover, error) {
	if s.mon == nil {
		return nil, ErrNotSeparated
	}
	s.mu.Lock()
	s.closing = true
	for l := range s.listeners {
		l.Close()
	}
	s.mu.Unlock()
	return s.mon.Detach()
}

// Keep takes over the sessions of a detached server (Server.Detach) in a
// session keeper: cfg is the configuration the keeper opened again (its
// host keys, which may come from a token opened anew, its Logger; none of
// its listeners or settings for new connections are used). The keeper
// signs the sessions' key re-exchanges with the host keys the detached
// server had (and cfg still has), writes their login records and relays
// their log lines. Monitor.Wait returns when the last session's process
// has ended; Monitor.EndSessions disconnects them.
func Keep(cfg *Config, h *monitor.Handover) (*monitor.Monitor, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	st, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	mc := monitor.Config{Logger: st.log, LoginRecords: loginRecorder(st)}
	if st.Separation != nil {
		mc.LogLevel = st.Separation.LogLevel
	}
	if len(st.HostKeys) > 0 {
		if mc.HostKeys, mc.HostPublicKeys, err = transport.NewHostKeySigner(st.HostKeys, nil); err != nil {
			st.log.Error("sshd: session keeper: host keys; re-exchanges will fail", "err", err)
		}
	}
	m, err := monitor.Resume(mc, h)
	if err != nil {
		return nil, fmt.Errorf("sshd: session keeper: %w", err)
	}
	return m, nil
}
