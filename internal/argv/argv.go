// Package argv splits a line into arguments by the rules OpenSSH's sshd
// applies to its configuration lines and to the commands they name
// (AuthorizedKeysCommand and the like, internal-sftp's flags).
//
// # Rules
//
// Blanks (spaces and tabs) separate arguments. Double or single quotes
// keep blanks inside one argument and may start or end in the middle of
// one ("a"b is ab). A backslash escapes a double quote, a single quote, a
// backslash or, outside quotes, a space, inside single quotes as well as
// outside; before any other character, or at the end, it is kept as
// written. These are not a shell's rules: 'a\'b' is a'b, and a\b is a,
// backslash, b.
//
// With comments on, an unquoted '#' at the start of an argument ends the
// line, as in sshd_config.
package argv

import (
	"errors"
	"strings"
)

// ErrUnterminatedQuote is the error for a quote that the line does not
// close.
var ErrUnterminatedQuote = errors.New("argv: unterminated quoted argument")

// Split splits s into arguments by the package's rules; with comments
// set, a '#' starting an argument ends s.
func Split(s string, comments bool) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		inArg bool
		quote byte
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && escapable(s[i+1], quote):
			i++
			cur.WriteByte(s[i])
			inArg = true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == ' ' || c == '\t':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '#' && comments && !inArg:
			return args, nil
		case c == '"' || c == '\'':
			quote, inArg = c, true
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, ErrUnterminatedQuote
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}

// escapable reports whether a backslash before c escapes it.
func escapable(c, quote byte) bool {
	return c == '"' || c == '\'' || c == '\\' || (c == ' ' && quote == 0)
}

// Quote returns a as one argument that Split reads back as a: a itself
// when that is safe, else a double-quoted form.
func Quote(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\"'\\#") {
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
