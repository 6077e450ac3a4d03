package config

import (
	"errors"
	"fmt"
	"strings"
)

// Status says what offload does with a keyword.
type Status int

// Keyword statuses. Every keyword of OpenSSH 10's sshd_config(5) has one.
const (
	// Supported: offload implements the keyword as OpenSSH documents it;
	// KeywordInfo.Applied says where.
	Supported Status = iota + 1
	// Refused: the feature is not implemented in offload. A line asking
	// for it fails -t with ErrNotImplemented; only the value that means
	// what offload does (KeywordInfo.Accepted, usually the feature off) is
	// accepted, and then it changes nothing.
	Refused
	// Inert: the keyword configures a feature that is off in offload
	// because another keyword is refused (X11UseLocalhost while
	// X11Forwarding is refused): it is checked as OpenSSH checks it and has
	// no effect, exactly as in OpenSSH with that feature off.
	Inert
	// Deprecated: OpenSSH warns "Deprecated option" and ignores the line;
	// so does offload.
	Deprecated
	// Unsupported: OpenSSH built without the feature on Linux (GSSAPI,
	// Kerberos, AFS) warns "Unsupported option" and ignores the line; so
	// does offload, which has none of them.
	Unsupported
)

var statusNames = map[Status]string{Supported: "supported", Refused: "refused", Inert: "inert",
	Deprecated: "deprecated", Unsupported: "unsupported"}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status(%d)", int(s))
}

var (
	// ErrUnknownKeyword is wrapped by the error for a word that is no
	// sshd_config keyword (OpenSSH: "Bad configuration option").
	ErrUnknownKeyword = errors.New("unknown keyword")
	// ErrNotImplemented is wrapped by the error for a keyword, or a value
	// of one, whose feature offload does not implement.
	ErrNotImplemented = errors.New("not implemented in offload")
	// ErrNotInMatch is wrapped by the error for a keyword that OpenSSH
	// does not allow inside a Match block.
	ErrNotInMatch = errors.New("not allowed within a Match block")
)

// repeat says how repeated lines of a keyword combine.
type repeat int

const (
	firstWins  repeat = iota // a single value: the first line wins, later ones are only checked
	accumulate               // each line adds values (Port, HostKey, AllowUsers, ...)
)

// keyword describes one configuration keyword: its status, how many
// arguments it takes, how they set the Config, its default and how -T
// prints it. The table of them is in table.go.
type keyword struct {
	name    string // canonical spelling, as in sshd_config(5)
	status  Status
	repeat  repeat
	minArgs int
	maxArgs int  // -1: unlimited
	rest    bool // takes the rest of the line as one argument (ForceCommand)

	// inMatch: OpenSSH allows the keyword inside Match. perConn: offload
	// applies it per connection; a keyword with inMatch but not perConn is
	// refused inside Match.
	inMatch, perConn bool

	// applied says where offload applies a supported keyword; what names
	// the feature of a refused or inert one; owner is who builds it.
	applied, what, owner string
	// accepted is the value of a refused keyword that means what offload
	// does ("" when none is accepted); it is the default while refused.
	accepted string
	// inertWhile names the refused keyword that makes an inert one moot,
	// or, for features no keyword turns on, is checked by inertOff.
	inertWhile string
	inertOff   func() bool
	// example is a value that differs from the default: for a supported
	// keyword it must change the server's settings, for a refused one it
	// must be refused (see the tests).
	example string
	// debian marks keywords only Debian's OpenSSH knows.
	debian bool
	// noPrint keeps -T from printing the keyword.
	noPrint bool
	// own marks offload's own keywords (not OpenSSH's).
	isOwn bool

	set   func(c *Config, args []string) error
	def   func(c *Config)
	print func(c *Config) [][]string // one argument list per printed line; nil prints nothing
}

// alias is an old spelling OpenSSH still accepts for a keyword.
type alias struct{ old, target string }

// Builder methods, used by the table: each returns kw so that an entry
// stays on one or two lines.

func (kw *keyword) supported(applied string) *keyword {
	kw.status, kw.applied = Supported, applied
	return kw
}

// refused marks a keyword whose feature offload does not implement yet;
// accepted is the one value that means what offload does ("" for none).
func (kw *keyword) refused(owner, what, accepted string) *keyword {
	kw.status, kw.owner, kw.what, kw.accepted = Refused, owner, what, accepted
	return kw
}

// inert marks a keyword that only configures the feature of the refused
// keyword while.
func (kw *keyword) inert(while, what string) *keyword {
	kw.status, kw.inertWhile, kw.what = Inert, while, what
	return kw
}

func (kw *keyword) match() *keyword            { kw.inMatch = true; return kw }
func (kw *keyword) perConnection() *keyword    { kw.inMatch, kw.perConn = true, true; return kw }
func (kw *keyword) eg(example string) *keyword { kw.example = example; return kw }
func (kw *keyword) many() *keyword             { kw.repeat = accumulate; return kw }
func (kw *keyword) debianOnly() *keyword       { kw.debian = true; return kw }
func (kw *keyword) own() *keyword              { kw.isOwn = true; return kw }
func (kw *keyword) args(lo, hi int) *keyword   { kw.minArgs, kw.maxArgs = lo, hi; return kw }
func (kw *keyword) restOfLine() *keyword       { kw.rest, kw.minArgs, kw.maxArgs = true, 1, 1; return kw }

// noted marks a keyword OpenSSH deprecates or ignores: a warning and
// nothing else. ignore (Protocol) logs at debug level, as OpenSSH does.
func noted(name string, status Status, inMatch bool) *keyword {
	return &keyword{name: name, status: status, inMatch: inMatch, minArgs: 1, maxArgs: -1, example: "yes",
		set: func(*Config, []string) error { return nil }}
}

func deprecated(name string) *keyword  { return noted(name, Deprecated, false) }
func unsupported(name string) *keyword { return noted(name, Unsupported, false) }

// checkArgs checks the argument count of a line.
func checkArgs(kw *keyword, args []string) error {
	switch {
	case len(args) < kw.minArgs && kw.minArgs == 1:
		return errors.New("missing argument")
	case len(args) < kw.minArgs:
		return fmt.Errorf("needs at least %d arguments", kw.minArgs)
	case kw.maxArgs >= 0 && len(args) > kw.maxArgs:
		return fmt.Errorf("takes %d argument(s), got %d (quote arguments holding blanks)", kw.maxArgs, len(args))
	}
	return nil
}

// refusal is the error for a value of a refused keyword other than the
// accepted one.
func (kw *keyword) refusal(args []string) error {
	msg := fmt.Sprintf("%s (%s %s) is %v", kw.what, kw.name, strings.Join(args, " "), ErrNotImplemented)
	if kw.accepted != "" {
		msg += fmt.Sprintf("; only %q is accepted", kw.name+" "+kw.accepted)
	}
	return &refusedError{msg}
}

type refusedError struct{ msg string }

func (e *refusedError) Error() string        { return e.msg }
func (e *refusedError) Is(target error) bool { return target == ErrNotImplemented }

// notImplemented is the error for a value of a supported keyword that
// offload does not implement (ListenAddress ... rdomain, internal-sftp
// flags).
func notImplemented(format string, a ...any) error {
	return &refusedError{fmt.Sprintf(format, a...) + " is " + ErrNotImplemented.Error()}
}

// applyDefault sets kw's default: for a refused keyword the accepted
// value, which is what offload does.
func (kw *keyword) applyDefault(c *Config) {
	if kw.status == Refused && kw.accepted != "" {
		// The accepted value parses: TestKeywordTable checks every one.
		_ = kw.set(c, strings.Fields(kw.accepted))
		return
	}
	if kw.def != nil {
		kw.def(c)
	}
}

// hidden marks keywords -T does not print (OpenSSH does not either, or
// the value is meaningless in offload) although they have a value.
func (kw *keyword) hidden() *keyword { kw.noPrint = true; return kw }
