package config

import (
	"errors"
	"strings"
	"unicode/utf8"
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
// argument, and a backslash outside single quotes escapes the next
// character. An unquoted '#' at the start of an argument begins a comment
// that runs to the end of the line. A blank or comment line gives an empty
// keyword and no error.
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
	var (
		args    []string
		cur     strings.Builder
		inArg   bool
		quote   byte
		escaped bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			cur.WriteByte(c)
			escaped = false
		case quote != 0 && c == quote:
			quote = 0
		case quote == '\'':
			cur.WriteByte(c)
		case c == '\\':
			escaped, inArg = true, true
		case quote == '"':
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote, inArg = c, true
		case c == ' ' || c == '\t':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '#' && !inArg:
			return args, nil
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if quote != 0 || escaped {
		return nil, ErrUnterminatedQuote
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}

// quoteArg returns a, quoted when ParseLine would otherwise split or
// change it, so that printed configurations read back unchanged.
func quoteArg(a string) string {
	if a != "" && a[0] != '=' && !strings.ContainsAny(a, " \t\"'\\#") {
		return a
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(a); i++ {
		if a[i] == '"' || a[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(a[i])
	}
	b.WriteByte('"')
	return b.String()
}
