package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/offload/offload/sshd/sshlog"
)

// facilityKey is the attribute internal-sftp's -f puts on its records
// (package sftp does when the handler is not an sftp.FacilityHandler; a
// post-auth process's lines reach the monitor with it).
const facilityKey = "facility"

// facilityRouter is the handler of a daemon that logs to syslog: a record
// carrying a facility attribute (internal-sftp -f AUTHPRIV) goes to the
// system log under that facility, every other one under SyslogFacility,
// as sshd and its sftp-server log. The attribute itself is not printed.
type facilityRouter struct {
	shared   *facilityWriters
	facility string                            // from WithAttrs; "" for the default
	ops      []func(slog.Handler) slog.Handler // WithAttrs and WithGroup, in order
}

// facilityWriters holds one syslog connection per facility used.
type facilityWriters struct {
	mu            sync.Mutex
	def           string // SyslogFacility
	network, addr string // the syslog socket ("", "": /dev/log)
	byName        map[string]slog.Handler
	writers       []*syslogWriter
	failed        map[string]bool
}

// newFacilityRouter connects to the system log under facility (the
// default) and returns the handler and a function closing every
// connection it opened.
func newFacilityRouter(facility, network, addr string) (*facilityRouter, func(), error) {
	w, err := newSyslogWriter(facility, network, addr)
	if err != nil {
		return nil, nil, err
	}
	def := strings.ToUpper(facility)
	fw := &facilityWriters{def: def, network: network, addr: addr, writers: []*syslogWriter{w},
		byName: map[string]slog.Handler{def: bareHandler(w)}, failed: map[string]bool{}}
	closeAll := func() {
		fw.mu.Lock()
		defer fw.mu.Unlock()
		for _, w := range fw.writers {
			w.Close()
		}
	}
	return &facilityRouter{shared: fw}, closeAll, nil
}

func bareHandler(w *syslogWriter) slog.Handler {
	return sshlog.NewHandler(w, &sshlog.Options{Format: sshlog.Bare, Level: slog.LevelDebug - 4})
}

// handler returns the handler of a facility, connecting on first use; a
// facility that cannot be reached falls back to the default.
func (fw *facilityWriters) handler(name string) slog.Handler {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	name = strings.ToUpper(name)
	if h, ok := fw.byName[name]; ok {
		return h
	}
	if _, known := syslogPriorities[name]; !known || fw.failed[name] {
		return fw.byName[fw.def]
	}
	w, err := newSyslogWriter(name, fw.network, fw.addr)
	if err != nil {
		fw.failed[name] = true
		return fw.byName[fw.def]
	}
	fw.writers = append(fw.writers, w)
	fw.byName[name] = bareHandler(w)
	return fw.byName[name]
}

func (rt *facilityRouter) Enabled(context.Context, slog.Level) bool { return true }

func (rt *facilityRouter) Handle(ctx context.Context, r slog.Record) error {
	facility, tagged := rt.facility, false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == facilityKey {
			facility, tagged = a.Value.String(), true
		}
		return true
	})
	if tagged {
		r2 := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != facilityKey {
				r2.AddAttrs(a)
			}
			return true
		})
		r = r2
	}
	h := rt.shared.handler(rt.shared.def)
	if facility != "" {
		h = rt.shared.handler(facility)
	}
	for _, op := range rt.ops {
		h = op(h)
	}
	return h.Handle(ctx, r)
}

func (rt *facilityRouter) WithAttrs(as []slog.Attr) slog.Handler {
	c := *rt
	var keep []slog.Attr
	for _, a := range as {
		if a.Key == facilityKey {
			c.facility = a.Value.String()
			continue
		}
		keep = append(keep, a)
	}
	if len(keep) > 0 {
		c.ops = append(rt.ops[:len(rt.ops):len(rt.ops)], func(h slog.Handler) slog.Handler { return h.WithAttrs(keep) })
	}
	return &c
}

func (rt *facilityRouter) WithGroup(name string) slog.Handler {
	c := *rt
	c.ops = append(rt.ops[:len(rt.ops):len(rt.ops)], func(h slog.Handler) slog.Handler { return h.WithGroup(name) })
	return &c
}
