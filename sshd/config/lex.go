package config

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/offload/offload/internal/argv"
)

// Errors of the line tokenizer.
var (
	ErrUnterminatedQuote = errors.New("unterminated quoted argument")
	ErrNoKeyword         = errors.New("line has arguments but no keyword")
	ErrInvalidUTF8       = errors.New("line is not valid UTF-8")
	ErrControlChar       = errors.New("line holds a control character")
)

// ParseLine splits one configuration line into its keyword and arguments.
//
// The keyword ends at the first blank or '='; one '=' may separate it from
// the arguments ("Port=22", "Port = 22", "Port 22"). Arguments are
// separated by blanks; double or single quotes keep blanks inside one
// argument. A backslash escapes a quote, a backslash or (outside quotes) a
// space, in or out of quotes alike; before any other character it is kept
// as written. An unquoted '#' at the start of an argument begins a comment
// that runs to the end of the line. These are OpenSSH's sshd's rules
// (package argv), checked side by side with sshd -T. A blank or comment
// line gives an empty keyword and no error.
func ParseLine(line string) (keyword string, args []string, err error) {
	if !utf8.ValidString(line) {
		return "", nil, ErrInvalidUTF8
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.ContainsFunc(line, isControl) {
		return "", nil, ErrControlChar
	}
	rest := strings.TrimLeft(line, " \t")
	if rest == "" || rest[0] == '#' {
		return "", nil, nil
	}
	end := strings.IndexAny(rest, " \t=")
	if end < 0 {
		return rest, nil, nil
	}
	keyword, rest = rest[:end], strings.TrimLeft(rest[end:], " \t")
	if strings.HasPrefix(rest, "=") {
		rest = rest[1:]
	}
	if keyword == "" {
		return "", nil, ErrNoKeyword
	}
	args, err = splitArgs(rest)
	return keyword, args, err
}

func isControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// splitArgs splits s into arguments as ParseLine describes.
func splitArgs(s string) ([]string, error) {
	args, err := argv.Split(s, true)
	if err != nil {
		return nil, ErrUnterminatedQuote
	}
	return args, nil
}

// quoteArg returns a, quoted when ParseLine would otherwise split or
// change it (a leading '=' would read as the keyword's separator), so
// that printed configurations read back unchanged.
func quoteArg(a string) string {
	if q := argv.Quote(a); q != a || !strings.HasPrefix(a, "=") {
		return q
	}
	return `"` + a + `"`
}
