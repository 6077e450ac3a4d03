// Package sshlog writes logs as OpenSSH's sshd does, so that tools built
// for its logs (fail2ban, logwatch, SIEM rules) read offload's.
//
// # Records in OpenSSH's words
//
// Code that logs an event OpenSSH logs ("Accepted publickey for …",
// "Failed password for …", "Invalid user …") uses OpenSSH's text as the
// slog message and adds the Worded attribute. A Handler writes such a
// record as the bare message (the structured attributes stay for other
// handlers); any other record is written as its message followed by its
// attributes as key=value pairs.
//
// # Formats
//
// Bare is OpenSSH's -e (and what journald is given: it adds the time and
// the identifier itself); Program prefixes "sshd[PID]: "; Syslog prefixes
// the traditional syslog time and host as well ("Dec  3 12:41:33 host
// sshd[812]: …"), which is what log readers such as fail2ban expect in a
// file (offload's -E). As in OpenSSH, errors are prefixed "error: ",
// debug records "debug1: ", and control characters in a message are
// written as \ooo octal escapes, so that no client-chosen text can start
// a line of its own.
package sshlog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// WordedKey is the attribute that marks a record in OpenSSH's words.
const WordedKey = "openssh"

// Worded is the attribute to add to a record whose message is OpenSSH's
// text for the event.
func Worded() slog.Attr { return slog.Bool(WordedKey, true) }

// Format is the line prefix.
type Format int

// Formats.
const (
	Bare    Format = iota // "message"
	Program               // "sshd[PID]: message"
	Syslog                // "Mmm dd hh:mm:ss host sshd[PID]: message"
)

// Options configure a Handler. The zero value writes Bare lines at Info
// and above.
type Options struct {
	Format  Format
	Program string       // "" means "sshd"
	PID     int          // 0 means this process's
	Host    string       // "" means the short host name
	Level   slog.Leveler // nil means slog.LevelInfo
	Now     func() time.Time
}

// Handler is a slog.Handler writing OpenSSH-style lines. It is safe for
// concurrent use; each record is one write.
type Handler struct {
	w      io.Writer
	mu     *sync.Mutex
	o      Options
	prefix string // "sshd[PID]: " for Program and Syslog
	attrs  []byte // key=value of WithAttrs, pre-formatted
	worded bool   // WithAttrs carried Worded
	group  string
}

// NewHandler returns a Handler writing to w.
func NewHandler(w io.Writer, o *Options) *Handler {
	h := &Handler{w: w, mu: &sync.Mutex{}}
	if o != nil {
		h.o = *o
	}
	if h.o.Program == "" {
		h.o.Program = "sshd"
	}
	if h.o.PID == 0 {
		h.o.PID = os.Getpid()
	}
	if h.o.Host == "" {
		h.o.Host, _ = os.Hostname()
		h.o.Host, _, _ = strings.Cut(h.o.Host, ".")
	}
	if h.o.Level == nil {
		h.o.Level = slog.LevelInfo
	}
	if h.o.Now == nil {
		h.o.Now = time.Now
	}
	if h.o.Format != Bare {
		h.prefix = fmt.Sprintf("%s[%d]: ", h.o.Program, h.o.PID)
	}
	return h
}

// Enabled reports whether level is logged.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.o.Level.Level()
}

// Handle writes one record.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	if h.o.Format == Syslog {
		b.WriteString(h.o.Now().Format(time.Stamp))
		b.WriteByte(' ')
		b.WriteString(h.o.Host)
		b.WriteByte(' ')
	}
	b.WriteString(h.prefix)
	b.WriteString(levelPrefix(r.Level))
	escape(&b, r.Message)
	worded := h.worded
	var rest bytes.Buffer
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == WordedKey {
			worded = true
			return true
		}
		appendAttr(&rest, h.group, a)
		return true
	})
	if !worded {
		b.Write(h.attrs)
		b.Write(rest.Bytes())
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b.Bytes())
	return err
}

// levelPrefix is OpenSSH's text before a message of this level.
func levelPrefix(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error: "
	case l < slog.LevelInfo:
		return "debug1: "
	}
	return ""
}

// WithAttrs returns a Handler that adds attrs to every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	var b bytes.Buffer
	b.Write(h.attrs)
	for _, a := range attrs {
		if a.Key == WordedKey {
			c.worded = true
			continue
		}
		appendAttr(&b, h.group, a)
	}
	c.attrs = b.Bytes()
	return &c
}

// WithGroup returns a Handler that qualifies later attributes with name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	if c.group != "" {
		c.group += "."
	}
	c.group += name
	return &c
}

func appendAttr(b *bytes.Buffer, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	key := a.Key
	if group != "" {
		key = group + "." + key
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			appendAttr(b, key, g)
		}
		return
	}
	b.WriteByte(' ')
	escape(b, key)
	b.WriteByte('=')
	v := a.Value.String()
	if v == "" || strings.ContainsAny(v, " =\"") {
		escape(b, fmt.Sprintf("%q", v))
		return
	}
	escape(b, v)
}

// escape writes s with control characters (and DEL and invalid bytes
// alike: every byte below 0x20 and 0x7f) as \ooo, as OpenSSH's log does.
func escape(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			fmt.Fprintf(b, "\\%03o", c)
			continue
		}
		b.WriteByte(c)
	}
}
