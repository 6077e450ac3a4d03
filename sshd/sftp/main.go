package sftp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"log/syslog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// stdio is a Channel on a process's standard input and output.
type stdio struct {
	io.Reader
	io.Writer
}

// Main serves one session on stdin and stdout as sftp-server(8) does: as
// the running user, relative paths starting in the working directory (or
// in -d's), logging to syslog under -f's facility (AUTH by default) or,
// with -e, to stderr. args are the flags (ParseArgs); root, when not
// empty, is Config.Root (and the working directory is then taken as a
// name within it). It returns when stdin ends. Programs that need a
// stand-alone SFTP server, such as the helper the connection layer starts
// when it cannot change identity itself, call it from their main.
func Main(args []string, root string, stdin io.Reader, stdout, stderr io.Writer) error {
	opts, err := ParseArgs(args)
	if err != nil {
		return err
	}
	cfg := &Config{Options: *opts, Root: root, ClientAddr: clientFromEnv()}
	if u, err := user.Current(); err == nil {
		cfg.User, cfg.Home = u.Username, u.HomeDir
		if id, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			cfg.UID = uint32(id)
		}
	}
	wd, err := os.Getwd()
	if err != nil || root != "" {
		wd = "" // relative paths start in the home directory
	}
	cfg.Logger = mainLogger(opts, stderr)
	if wd != "" {
		wd = filepath.Clean(wd)
	}
	s, err := newServer(stdio{stdin, stdout}, cfg, wd)
	if err != nil {
		return err
	}
	return s.Serve()
}

// clientFromEnv is the client address from SSH_CONNECTION.
func clientFromEnv() string {
	addr, _, _ := strings.Cut(os.Getenv("SSH_CONNECTION"), " ")
	return addr
}

// mainLogger logs to stderr with -e, else to syslog (nothing when no
// syslog daemon listens).
func mainLogger(o *Options, stderr io.Writer) *slog.Logger {
	if o.Stderr {
		return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	w, err := syslog.New(syslog.Priority(facilityCode(o.Facility))|syslog.LOG_INFO, "internal-sftp")
	if err != nil {
		return nil
	}
	return slog.New(syslogHandler{w: w})
}

// syslogHandler writes records to syslog at their level.
type syslogHandler struct {
	w     *syslog.Writer
	attrs []slog.Attr
}

func (syslogHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h syslogHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		if a.Key != "facility" {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	switch {
	case r.Level >= slog.LevelError:
		return h.w.Err(b.String())
	case r.Level >= slog.LevelInfo:
		return h.w.Info(b.String())
	}
	return h.w.Debug(b.String())
}

func (h syslogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return syslogHandler{w: h.w, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], as...)}
}

func (h syslogHandler) WithGroup(string) slog.Handler { return h }
