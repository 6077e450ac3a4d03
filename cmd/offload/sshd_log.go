package main

import (
	"context"
	"fmt"
	"log/slog"
	"log/syslog"
	"strings"
	"sync"
)

// levelHandler filters records below a level before an inner handler
// that passes everything, so that one connection (LogLevel in a Match
// block) can log more than the server does.
type levelHandler struct {
	inner slog.Handler
	level slog.Leveler
}

func (h *levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level.Level() && h.inner.Enabled(ctx, l)
}
func (h *levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.inner.Handle(ctx, r)
}
func (h *levelHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &levelHandler{h.inner.WithAttrs(a), h.level}
}
func (h *levelHandler) WithGroup(n string) slog.Handler {
	return &levelHandler{h.inner.WithGroup(n), h.level}
}

// withLevel returns log logging at level: over the unfiltered handler
// under log's level filter when there is one, so the level may be lower
// than the server's too.
func withLevel(log *slog.Logger, level slog.Level) *slog.Logger {
	inner := log.Handler()
	if lh, ok := inner.(*levelHandler); ok {
		inner = lh.inner
	}
	return slog.New(&levelHandler{inner: inner, level: level})
}

// syslogPriorities maps SyslogFacility names to syslog facilities.
var syslogPriorities = map[string]syslog.Priority{
	"DAEMON": syslog.LOG_DAEMON, "USER": syslog.LOG_USER, "AUTH": syslog.LOG_AUTH, "AUTHPRIV": syslog.LOG_AUTHPRIV,
	"LOCAL0": syslog.LOG_LOCAL0, "LOCAL1": syslog.LOG_LOCAL1, "LOCAL2": syslog.LOG_LOCAL2, "LOCAL3": syslog.LOG_LOCAL3,
	"LOCAL4": syslog.LOG_LOCAL4, "LOCAL5": syslog.LOG_LOCAL5, "LOCAL6": syslog.LOG_LOCAL6, "LOCAL7": syslog.LOG_LOCAL7,
}

// syslogWriter sends sshlog's Bare lines (one write per record) to the
// system log (/dev/log) with a facility, as sshd does, at the severity
// the line's OpenSSH prefix names ("error: ", "debug1: ", else info). A
// system log that cannot be reached (no /dev/log in a container) stops
// nothing: the writer connects on first use and again after a failure,
// and drops the lines meanwhile, as sshd's syslog(3) does.
type syslogWriter struct {
	prio          syslog.Priority
	network, addr string
	mu            sync.Mutex
	w             *syslog.Writer // nil while not connected
}

// newSyslogWriter returns a writer to the system log; network and addr
// name another syslog socket ("" and "": the local /dev/log). Only an
// unknown facility is an error.
func newSyslogWriter(facility, network, addr string) (*syslogWriter, error) {
	p, ok := syslogPriorities[strings.ToUpper(facility)]
	if !ok {
		return nil, fmt.Errorf("SyslogFacility %q: unknown facility", facility)
	}
	s := &syslogWriter{prio: p | syslog.LOG_INFO, network: network, addr: addr}
	s.mu.Lock()
	s.connect()
	s.mu.Unlock()
	return s, nil
}

// connect dials the system log; s.mu is held.
func (s *syslogWriter) connect() {
	if w, err := syslog.Dial(s.network, s.addr, s.prio, "sshd"); err == nil {
		s.w = w
	}
}

func (s *syslogWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		if s.connect(); s.w == nil {
			return len(b), nil // no system log: dropped
		}
	}
	msg := strings.TrimSuffix(string(b), "\n")
	var err error
	switch {
	case strings.HasPrefix(msg, "error: "):
		err = s.w.Err(msg)
	case strings.HasPrefix(msg, "debug"):
		err = s.w.Debug(msg)
	default:
		err = s.w.Info(msg)
	}
	if err != nil {
		s.w.Close()
		s.w = nil
	}
	return len(b), nil
}

func (s *syslogWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return nil
	}
	err := s.w.Close()
	s.w = nil
	return err
}
