package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
)

// CommandLine is the File of a LineError in a -o override.
const CommandLine = "command line"

// maxLineLength bounds one configuration line; sshd's own limit is 4 KiB
// but pkcs11: URIs and long allow lists deserve more.
const maxLineLength = 64 << 10

// LineError reports a bad line: the file (or CommandLine for -o), the
// line number (the position of the -o for overrides), the keyword as
// written, and the cause.
type LineError struct {
	File    string
	Line    int
	Keyword string
	Err     error
}

func (e *LineError) Error() string {
	return "config: " + where(e.File, e.Line, e.Keyword) + e.Err.Error()
}

func (e *LineError) Unwrap() error { return e.Err }

func where(file string, line int, keyword string) string {
	w := fmt.Sprintf("%s line %d: ", file, line)
	if file == CommandLine {
		w = fmt.Sprintf("command line option %d (-o): ", line)
	}
	if keyword != "" {
		w += keyword + ": "
	}
	return w
}

// Warning is something a configuration asks for that offload, like sshd,
// only warns about: a deprecated or unsupported keyword, an algorithm
// offload does not implement in a list that leaves others.
type Warning struct {
	File    string
	Line    int
	Keyword string
	Msg     string
	// Level is slog.LevelWarn, or LevelDebug where sshd logs at debug
	// level (Protocol).
	Level slog.Level
}

func (w Warning) String() string { return "config: " + where(w.File, w.Line, w.Keyword) + w.Msg }

// line is one configuration line as read: where it is, its keyword and
// arguments, and the Match conditions it stands under (all must hold).
type line struct {
	file  string
	num   int
	word  string // as written
	kw    *keyword
	args  []string
	conds []*matchLine
}

// source is what Parse read: the overrides and the file's lines in
// order (includes expanded), for ForConnection to apply again.
type source struct {
	overrides []*line
	lines     []*line
	hasMatch  bool
}

// Load reads the file at path and applies the -o overrides (each
// "Keyword=value" or "Keyword value"). An empty path means no file.
func Load(path string, overrides []string) (*Config, error) {
	if path == "" {
		return Parse("", nil, overrides)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return Parse(path, f, overrides)
}

// Parse reads a configuration named name from r (nil for none) and
// applies overrides. As in sshd, the overrides come first and win: a
// keyword given with -o replaces every line of the file that sets it.
// In the file, the first line of a single-valued keyword wins and later
// ones are only checked; accumulating keywords (Port, HostKey, AllowUsers,
// ...) add up. Lines inside Match blocks are checked but apply only to
// the connections they match (see ForConnection). Keywords not given get
// their defaults.
func Parse(name string, r io.Reader, overrides []string) (*Config, error) {
	rd := &reader{src: &source{}}
	for i, o := range overrides {
		l, err := rd.parseLine(CommandLine, i+1, o, nil)
		if err != nil {
			return nil, err
		}
		if l != nil {
			rd.src.overrides = append(rd.src.overrides, l)
		}
	}
	if r != nil {
		if err := rd.read(name, r, nil); err != nil {
			return nil, err
		}
	}
	c, err := rd.src.build(nil)
	if err != nil {
		return nil, err
	}
	c.warnings = rd.warnings
	return c, nil
}

// build applies the source for a connection (matched: the lines of the
// Match blocks that match it; nil for the global configuration): first
// those, then the
// overrides, then the file's global lines; a keyword set by an earlier
// group is not touched by a later one, as sshd copies Match values over
// the global ones.
func (s *source) build(matched []*line) (*Config, error) {
	c := &Config{src: s}
	for _, group := range [][]*line{matched, s.overrides, globalLines(s)} {
		if err := c.applyLines(group); err != nil {
			return nil, err
		}
	}
	c.FillDefaults()
	c.lineWarn = nil
	return c, nil
}

func globalLines(s *source) []*line {
	var out []*line
	for _, l := range s.lines {
		if globallyActive(l.conds) {
			out = append(out, l)
		}
	}
	return out
}

// globallyActive reports whether lines under conds apply when the file is
// read, without a connection (no Match, or Match all / Version).
func globallyActive(conds []*matchLine) bool {
	for _, m := range conds {
		if ok, _ := m.eval(nil); !ok {
			return false
		}
	}
	return true
}

// applyLines applies one group of lines. Keywords already set by an
// earlier group are skipped; within the group a single-valued keyword
// keeps its first value. Each line was checked when read; what can still
// fail is a limit on accumulated values (more than 256 ports).
func (c *Config) applyLines(lines []*line) error {
	prior := maps.Clone(c.set)
	for _, l := range lines {
		kw := l.kw
		if kw.status == Deprecated || kw.status == Unsupported || prior[kw.name] {
			continue
		}
		if kw.repeat == firstWins && c.set[kw.name] {
			continue
		}
		if err := kw.set(c, l.args); err != nil {
			return &LineError{File: l.file, Line: l.num, Keyword: l.word, Err: err}
		}
		c.markSet(kw.name)
	}
	return nil
}

// reader carries what reading a file and its includes shares.
type reader struct {
	src      *source
	warnings []Warning
	files    int
	stack    []string // the files being read, outermost first
}

// read applies the lines of one file under the Match conditions outer
// (those of an enclosing Match when the file is included inside one).
// Include lines read other files in their place.
func (rd *reader) read(name string, r io.Reader, outer []*matchLine) error {
	rd.stack = append(rd.stack, name)
	defer func() { rd.stack = rd.stack[:len(rd.stack)-1] }()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineLength)
	conds, n := outer, 0
	for sc.Scan() {
		n++
		var err error
		if conds, err = rd.readLine(name, n, sc.Text(), outer, conds); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line longer than %d bytes", maxLineLength)
		}
		return &LineError{File: name, Line: n + 1, Err: err}
	}
	return nil
}

// readLine handles one line of a file and returns the Match conditions
// for the lines after it.
func (rd *reader) readLine(file string, n int, text string, outer, conds []*matchLine) ([]*matchLine, error) {
	word, args, err := ParseLine(text)
	if err != nil {
		return conds, &LineError{File: file, Line: n, Keyword: word, Err: err}
	}
	switch strings.ToLower(word) {
	case "":
		return conds, nil
	case "match":
		crit, err := parseMatch(args)
		if err != nil {
			return conds, &LineError{File: file, Line: n, Keyword: word, Err: err}
		}
		rd.src.hasMatch = true
		return append(outer[:len(outer):len(outer)], &matchLine{file: file, line: n, criteria: crit}), nil
	case "include":
		if len(args) == 0 {
			return conds, &LineError{File: file, Line: n, Keyword: word, Err: errors.New("missing argument")}
		}
		if err := rd.include(file, args, conds); err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				err = &LineError{File: file, Line: n, Keyword: word, Err: err}
			}
			return conds, err
		}
		return conds, nil
	}
	l, err := rd.parseLine(file, n, text, conds)
	if l != nil {
		rd.src.lines = append(rd.src.lines, l)
	}
	return conds, err
}

// parseLine parses and checks one keyword line (of a file, or an override
// when file is CommandLine).
func (rd *reader) parseLine(file string, n int, text string, conds []*matchLine) (*line, error) {
	word, args, err := ParseLine(text)
	if err == nil && word != "" {
		err = checkWord(word, file == CommandLine)
	}
	if err != nil || word == "" {
		if err != nil {
			err = &LineError{File: file, Line: n, Keyword: word, Err: err}
		}
		return nil, err
	}
	kw, _ := lookupKeyword(word)
	if kw.rest {
		args = []string{restOfLine(text, word)}
	}
	warns, err := rd.check(kw, args, conds)
	if err != nil {
		return nil, &LineError{File: file, Line: n, Keyword: word, Err: err}
	}
	for _, w := range warns {
		rd.warnings = append(rd.warnings, Warning{File: file, Line: n, Keyword: word, Msg: w, Level: slog.LevelWarn})
	}
	if kw.status == Deprecated || kw.status == Unsupported {
		rd.warnings = append(rd.warnings, noteWarning(file, n, word, kw))
	}
	return &line{file: file, num: n, word: word, kw: kw, args: args, conds: conds}, nil
}

// checkWord resolves a keyword or says why it is not one.
func checkWord(word string, cmdline bool) error {
	switch lw := strings.ToLower(word); {
	case cmdline && (lw == "match" || lw == "include"):
		return fmt.Errorf("%s directive %w as a command-line option", word, ErrNotImplemented)
	}
	if _, ok := lookupKeyword(word); !ok {
		return ErrUnknownKeyword
	}
	return nil
}

// restOfLine is what follows the keyword (and its '='), for keywords
// that take the whole rest of the line, blanks around it dropped. As in
// OpenSSH's sshd, a '#' in it is part of the value ("ForceCommand echo a
// #b" runs that line, whose shell drops the comment); the line must
// still split into arguments (balanced quotes).
func restOfLine(text, word string) string {
	rest := strings.TrimLeft(text, " \t")[len(word):]
	rest = strings.TrimLeft(rest, " \t")
	rest = strings.TrimPrefix(rest, "=")
	return strings.Trim(rest, " \t\r\n")
}

// check checks a line's arguments and where it stands: the value parses,
// a refused keyword asks for nothing but its accepted value, and a Match
// block holds only keywords sshd allows there and offload applies per
// connection. It returns the warnings the value gives (algorithms offload
// lacks).
func (rd *reader) check(kw *keyword, args []string, conds []*matchLine) ([]string, error) {
	if err := checkArgs(kw, args); err != nil {
		return nil, err
	}
	if len(conds) > 0 && !globallyActive(conds) {
		if !kw.inMatch {
			return nil, fmt.Errorf("directive '%s' is %w", kw.name, ErrNotInMatch)
		}
		if kw.status == Supported && !kw.perConn {
			return nil, &refusedError{fmt.Sprintf("%s inside a Match block is %v (it applies to the whole server; set it outside Match)", kw.name, ErrNotImplemented)}
		}
	}
	scratch := new(Config)
	if err := kw.set(scratch, args); err != nil {
		return nil, err
	}
	if kw.status == Refused && !sameValue(kw, scratch, refusedDefaults()) {
		return nil, kw.refusal(args)
	}
	return scratch.lineWarn, nil
}

func noteWarning(file string, n int, word string, kw *keyword) Warning {
	w := Warning{File: file, Line: n, Keyword: word, Level: slog.LevelWarn, Msg: "Deprecated option " + word + " (ignored, as by sshd)"}
	switch {
	case kw.name == "Protocol":
		w.Level, w.Msg = slog.LevelDebug, "Deprecated option Protocol (ignored, as by sshd)"
	case kw.status == Unsupported:
		w.Msg = "Unsupported option " + word + " (offload, like an sshd built without it, has no GSSAPI or Kerberos; ignored)"
	}
	return w
}

// sameValue reports whether c holds the same value of kw as ref, as -T
// would print it.
func sameValue(kw *keyword, c, ref *Config) bool {
	return fmt.Sprint(kw.print(c)) == fmt.Sprint(kw.print(ref))
}

// refusedDefaults is the default configuration, against which the value
// of a refused keyword is compared.
var refusedDefaults = sync.OnceValue(Defaults)

// matchedLines are the lines of the Match blocks that match (by
// results), of the keywords offload applies per connection.
func matchedLines(s *source, results map[*matchLine]bool) []*line {
	var out []*line
	for _, l := range s.lines {
		if len(l.conds) == 0 || !l.kw.perConn {
			continue
		}
		ok := true
		for _, m := range l.conds {
			ok = ok && results[m]
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// HasMatch reports whether the configuration has Match blocks, so that
// ForConnection can give a connection other settings.
func (c *Config) HasMatch() bool { return c.src != nil && c.src.hasMatch }

// ForConnection returns the effective configuration for a connection:
// the global one with the settings of every Match block that matches ci
// applied over it (sshd's order: within the blocks the first value wins;
// a keyword a block sets replaces its global value, lists included). When
// no block matches, it returns c itself, so callers can reuse what they
// derived from c. A group look-up that fails is an error, returned with
// c (the lines needing it do not match).
func (c *Config) ForConnection(ci ConnInfo) (*Config, error) {
	if !c.HasMatch() {
		return c, nil
	}
	results, err := c.src.evalAll(ci)
	lines := matchedLines(c.src, results)
	if len(lines) == 0 {
		return c, err
	}
	e, berr := c.src.build(lines)
	if berr != nil {
		return c, berr // a block adding to a list past its limit
	}
	return e, err
}

// evalAll evaluates every Match line once. The user's groups are looked
// up at most once, when a Group criterion needs them.
func (s *source) evalAll(ci ConnInfo) (map[*matchLine]bool, error) {
	results := map[*matchLine]bool{}
	var firstErr error
	for _, l := range s.lines {
		for _, m := range l.conds {
			if _, seen := results[m]; seen {
				continue
			}
			if ci.Groups == nil && m.needsGroups() && ci.User != "" && !ci.InvalidUser {
				g, err := LookupGroups(ci.User)
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("config: %s line %d: Match Group: %w", m.file, m.line, err)
				}
				ci.Groups = append(g, []string{}...) // non-nil: looked up
			}
			ok, err := m.eval(&ci)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("config: %w", err)
			}
			results[m] = ok
		}
	}
	return results, firstErr
}
