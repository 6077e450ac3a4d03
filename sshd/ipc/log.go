package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// LogHandler is the slog.Handler of a child process: each record goes to
// the monitor as a Log notification, so that a sandboxed child with no
// file access logs through the monitor's log (its format, its -E file,
// its syslog). Records longer than the bounds are cut.
type LogHandler struct {
	peer  *Peer
	level slog.Leveler
	attrs []slog.Attr
	group string
}

// NewLogHandler returns a handler that sends records at level or above.
func NewLogHandler(p *Peer, level slog.Leveler) *LogHandler {
	return &LogHandler{peer: p, level: level}
}

// Enabled reports whether level is logged.
func (h *LogHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// Handle sends r to the monitor; a failure to send is dropped (the
// monitor is gone).
func (h *LogHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]any{}
	add := func(a slog.Attr) bool {
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		attrs[key] = plain(a.Value.Resolve())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	b, err := json.Marshal(attrs)
	if err != nil || len(b) > maxLogLine {
		b = []byte(`{"attrs":"dropped: not encodable or too long"}`)
	}
	msg := r.Message
	if len(msg) > maxLogLine {
		msg = msg[:maxLogLine]
	}
	h.peer.Notify(TypeLog, (&Log{Level: int8(r.Level), Msg: msg, Attrs: b}).Marshal())
	return nil
}

// plain is v as the monitor's text log would show it: errors by their
// message, durations and times as text, other values as they are.
func plain(v slog.Value) any {
	switch v.Kind() {
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return x.Error()
		case fmt.Stringer:
			return x.String()
		}
	}
	return v.Any()
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	for _, a := range attrs {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		c.attrs = append(slices.Clone(c.attrs), a)
	}
	return &c
}

// WithGroup returns a handler that qualifies keys with name.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.group = strings.TrimPrefix(h.group+"."+name, ".")
	return &c
}

// Relay logs a child's Log record with log, tagged with the child's name.
// The record comes from a less privileged process: its level is clamped
// and its attributes are flattened to strings, numbers and booleans.
func Relay(log *slog.Logger, child string, m *Log) {
	level := slog.Level(m.Level)
	level = max(min(level, slog.LevelError), slog.LevelDebug)
	if !log.Enabled(context.Background(), level) {
		return
	}
	var attrs map[string]any
	if json.Unmarshal(m.Attrs, &attrs) != nil {
		attrs = map[string]any{"attrs": "malformed"}
	}
	args := []any{"proc", child}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, k, flat(attrs[k]))
	}
	log.Log(context.Background(), level, m.Msg, args...)
}

func flat(v any) any {
	switch v.(type) {
	case string, float64, bool, nil:
		return v
	}
	b, _ := json.Marshal(v)
	return string(b)
}
