package ipc

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// LogAttr is one attribute of a Log record. Value is a string, int64,
// uint64, float64, bool or nil: what the monitor's log shows.
type LogAttr struct {
	Key   string
	Value any
}

// Log is a log record from a child, relayed into the monitor's log.
type Log struct {
	Level int8   // slog.Level
	Msg   string // message
	Attrs []LogAttr
}

// Kinds of a LogAttr's value on the wire.
const (
	attrNil byte = iota
	attrString
	attrInt
	attrUint
	attrFloat
	attrBool
)

// Bounds of a Log: the message, the encoded attributes, their number and
// each key.
const (
	maxLogLine  = 8 << 10
	maxLogAttrs = 256
	maxLogKey   = maxText
)

// Marshal encodes m; the attributes are one string of their own.
func (m *Log) Marshal() []byte {
	b := []byte{byte(m.Level)}
	b = wire.AppendString(b, m.Msg)
	return wire.AppendBytes(b, appendAttrs(nil, m.Attrs))
}

func appendAttrs(b []byte, attrs []LogAttr) []byte {
	b = wire.AppendUint32(b, uint32(len(attrs)))
	for _, a := range attrs {
		b = appendAttrValue(wire.AppendString(b, a.Key), a.Value)
	}
	return b
}

// appendAttrValue encodes v; a value of another type goes as its text.
func appendAttrValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, attrNil)
	case string:
		return wire.AppendString(append(b, attrString), x)
	case int64:
		return wire.AppendUint64(append(b, attrInt), uint64(x))
	case uint64:
		return wire.AppendUint64(append(b, attrUint), x)
	case float64:
		return wire.AppendUint64(append(b, attrFloat), math.Float64bits(x))
	case bool:
		return wire.AppendBool(append(b, attrBool), x)
	}
	return appendAttrValue(b, fmt.Sprint(v))
}

// ParseLog decodes a Log.
func ParseLog(p []byte) (*Log, error) {
	d := newDecoder(p)
	m := &Log{Level: int8(d.Byte("level")), Msg: d.string("message", maxLogLine)}
	attrs := d.view("attrs", maxLogLine)
	if d.err == nil && d.Err() == nil {
		m.Attrs, d.err = parseAttrs(attrs)
	}
	return m, d.done(TypeLog)
}

func parseAttrs(p []byte) ([]LogAttr, error) {
	d := newDecoder(p)
	n := d.Uint32("attr count")
	if n > maxLogAttrs {
		return nil, &wire.FieldError{Field: "attrs", Err: fmt.Errorf("%d, at most %d", n, maxLogAttrs)}
	}
	var out []LogAttr
	for i := uint32(0); i < n && d.err == nil && d.Err() == nil; i++ {
		out = append(out, LogAttr{Key: d.string("attr key", maxLogKey), Value: d.attrValue()})
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return out, nil
}

func (d *decoder) attrValue() any {
	switch k := d.Byte("attr kind"); k {
	case attrNil:
		return nil
	case attrString:
		return d.string("attr value", maxLogLine)
	case attrInt:
		return int64(d.Uint64("attr value"))
	case attrUint:
		return d.Uint64("attr value")
	case attrFloat:
		return math.Float64frombits(d.Uint64("attr value"))
	case attrBool:
		return d.boolean("attr value")
	default:
		if d.err == nil {
			d.err = &wire.FieldError{Field: "attr kind", Err: fmt.Errorf("kind %d", k)}
		}
		return nil
	}
}

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
// monitor is gone). The attributes go sorted by key, the last of a key
// winning.
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
	msg := r.Message
	if len(msg) > maxLogLine {
		msg = msg[:maxLogLine]
	}
	h.peer.Notify(TypeLog, (&Log{Level: int8(r.Level), Msg: msg, Attrs: sortedAttrs(attrs)}).Marshal())
	return nil
}

// sortedAttrs lists attrs by key; too many or too long, they are
// replaced by a note saying so.
func sortedAttrs(attrs map[string]any) []LogAttr {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]LogAttr, 0, len(keys))
	for _, k := range keys {
		out = append(out, LogAttr{Key: k, Value: attrs[k]})
	}
	if len(out) > maxLogAttrs || len(appendAttrs(nil, out)) > maxLogLine {
		return []LogAttr{{Key: "attrs", Value: "dropped: too many or too long"}}
	}
	return out
}

// plain is v as the monitor's log shows it: numbers, strings and
// booleans as they are, errors by their message, durations and times as
// text, other values as fmt prints them (as slog's text handler does).
func plain(v slog.Value) any {
	switch v.Kind() {
	case slog.KindString:
		return v.String()
	case slog.KindInt64:
		return v.Int64()
	case slog.KindUint64:
		return v.Uint64()
	case slog.KindFloat64:
		return v.Float64()
	case slog.KindBool:
		return v.Bool()
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	}
	switch x := v.Any().(type) {
	case nil:
		return nil
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v.Any())
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
// The record comes from a less privileged process: its level is clamped,
// and its attributes are strings, numbers, booleans and nils (ParseLog).
func Relay(log *slog.Logger, child string, m *Log) {
	level := slog.Level(m.Level)
	level = max(min(level, slog.LevelError), slog.LevelDebug)
	if !log.Enabled(context.Background(), level) {
		return
	}
	args := make([]any, 0, 2+2*len(m.Attrs))
	args = append(args, "proc", child)
	for _, a := range m.Attrs {
		args = append(args, a.Key, a.Value)
	}
	log.Log(context.Background(), level, m.Msg, args...)
}
