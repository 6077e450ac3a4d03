package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
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
	where := fmt.Sprintf("%s line %d", e.File, e.Line)
	if e.File == CommandLine {
		where = fmt.Sprintf("command line option %d (-o)", e.Line)
	}
	if e.Keyword == "" {
		return fmt.Sprintf("config: %s: %v", where, e.Err)
	}
	return fmt.Sprintf("config: %s: %s: %v", where, e.Keyword, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

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
// ones are only checked; HostKey, ListenAddress, Port, AcceptEnv,
// AllowUsers, Subsystem, PKCS11Token, ProviderMap and ProviderDeny
// accumulate. Keywords not given get their defaults.
func Parse(name string, r io.Reader, overrides []string) (*Config, error) {
	c := new(Config)
	fromCmd := map[string]bool{}
	for i, o := range overrides {
		kw, err := c.applyLine(o, fromCmd)
		if err != nil {
			return nil, &LineError{File: CommandLine, Line: i + 1, Keyword: kw, Err: err}
		}
		if k, ok := lookupKeyword(kw); ok {
			fromCmd[k.name] = true
		}
	}
	if r != nil {
		rd := &reader{c: c, fromCmd: fromCmd}
		if err := rd.read(name, r, 0); err != nil {
			return nil, err
		}
	}
	c.FillDefaults()
	return c, nil
}

// read applies the lines of one file; Include lines read other files in
// their place.
func (rd *reader) read(name string, r io.Reader, depth int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineLength)
	n := 0
	for sc.Scan() {
		n++
		if inc, args, err := isInclude(sc.Text()); inc {
			if err == nil {
				err = rd.include(name, args, depth)
			}
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				err = &LineError{File: name, Line: n, Keyword: "Include", Err: err}
			}
			if err != nil {
				return err
			}
			continue
		}
		if kw, err := rd.c.applyLine(sc.Text(), rd.fromCmd); err != nil {
			return &LineError{File: name, Line: n, Keyword: kw, Err: err}
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

// applyLine parses one line and applies it. A keyword already set by an
// override (skip), or a single-valued keyword already set, is checked
// against a scratch Config and otherwise ignored.
func (c *Config) applyLine(line string, skip map[string]bool) (string, error) {
	word, args, err := ParseLine(line)
	if err != nil || word == "" {
		return word, err
	}
	kw, ok := lookupKeyword(word)
	if !ok {
		return word, unknownKeyword(word)
	}
	if err := checkArgs(kw, args); err != nil {
		return word, err
	}
	target := c
	if skip[kw.name] || (!kw.multi && c.set[kw.name]) {
		target = new(Config)
	}
	if err := kw.set(target, args); err != nil {
		return word, err
	}
	target.markSet(kw.name)
	return word, nil
}
