package sftp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// level is OpenSSH's log level order: a message is produced when its level
// is at most the session's.
type level int

const (
	levelQuiet level = iota
	levelFatal
	levelError
	levelInfo
	levelVerbose
	levelDebug1
	levelDebug2
	levelDebug3
)

// levelNames are the values of -l, as sshd_config's LogLevel.
var levelNames = [...]struct {
	name string
	lv   level
}{
	{"QUIET", levelQuiet}, {"FATAL", levelFatal}, {"ERROR", levelError}, {"INFO", levelInfo},
	{"VERBOSE", levelVerbose}, {"DEBUG", levelDebug1}, {"DEBUG1", levelDebug1},
	{"DEBUG2", levelDebug2}, {"DEBUG3", levelDebug3},
}

func parseLevel(s string) (level, error) {
	if s == "" {
		return levelError, nil // sftp-server's default
	}
	for _, l := range levelNames {
		if strings.EqualFold(s, l.name) {
			return l.lv, nil
		}
	}
	return 0, &ArgsError{Arg: s, Msg: "-l: unknown log level (QUIET, FATAL, ERROR, INFO, VERBOSE, DEBUG, DEBUG1-3)"}
}

// slogLevel is where a message of level l goes in log/slog.
func (l level) slogLevel() slog.Level {
	switch {
	case l <= levelError:
		return slog.LevelError
	case l <= levelVerbose:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// facilities are the values of -f, as sshd_config's SyslogFacility, with
// their syslog codes.
var facilities = [...]struct {
	name string
	code int
}{
	{"DAEMON", 3 << 3}, {"USER", 1 << 3}, {"AUTH", 4 << 3}, {"AUTHPRIV", 10 << 3},
	{"LOCAL0", 16 << 3}, {"LOCAL1", 17 << 3}, {"LOCAL2", 18 << 3}, {"LOCAL3", 19 << 3},
	{"LOCAL4", 20 << 3}, {"LOCAL5", 21 << 3}, {"LOCAL6", 22 << 3}, {"LOCAL7", 23 << 3},
}

func parseFacility(s string) (string, error) {
	for _, f := range facilities {
		if strings.EqualFold(s, f.name) {
			return f.name, nil
		}
	}
	return "", &ArgsError{Arg: s, Msg: "-f: unknown syslog facility (DAEMON, USER, AUTH, AUTHPRIV, LOCAL0-7)"}
}

// facilityCode is the syslog code of a facility name (AUTH when empty).
func facilityCode(name string) int {
	for _, f := range facilities {
		if f.name == name {
			return f.code
		}
	}
	return 4 << 3
}

// FacilityHandler is implemented by log handlers that write to syslog:
// WithFacility returns a handler that logs under the named facility
// (DAEMON, USER, AUTH, AUTHPRIV or LOCAL0-7). The server uses it for -f;
// with other handlers the facility is recorded as an attribute.
type FacilityHandler interface {
	slog.Handler
	WithFacility(name string) slog.Handler
}

// logger produces the session's messages at OpenSSH's levels.
type logger struct {
	l  *slog.Logger
	lv level
}

func newLogger(l *slog.Logger, o *Options) logger {
	if l == nil {
		return logger{l: slog.New(slog.DiscardHandler), lv: levelQuiet}
	}
	lv, _ := parseLevel(o.LogLevel) // checked by ParseArgs; bad values log errors only
	if o.Facility != "" {
		if fh, ok := l.Handler().(FacilityHandler); ok {
			l = slog.New(fh.WithFacility(o.Facility))
		} else {
			l = l.With("facility", o.Facility)
		}
	}
	return logger{l: l, lv: lv}
}

// on reports whether messages of level lv are produced.
func (g logger) on(lv level) bool { return lv <= g.lv }

// logf produces a message in sftp-server's words.
func (g logger) logf(lv level, format string, args ...any) {
	if !g.on(lv) {
		return
	}
	g.l.Log(context.Background(), lv.slogLevel(), fmt.Sprintf(format, args...))
}
