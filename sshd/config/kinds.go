package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Keyword constructors for the common shapes. Each takes an accessor of
// the Config field the keyword sets.

func boolKW(name string, def bool, field func(*Config) *bool) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) (err error) { *field(c), err = parseBool(a[0]); return err },
		def: func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string {
			return [][]string{{formatBool(*field(c))}}
		}}
}

func intKW(name string, lo, hi, def int, field func(*Config) *int) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) (err error) { *field(c), err = parseInt(a[0], lo, hi); return err },
		def: func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string {
			return [][]string{{strconv.Itoa(*field(c))}}
		}}
}

// timeKW is a time; noneZero prints a zero duration as "none" (as sshd -T
// does for UnusedConnectionTimeout).
func timeKW(name string, def time.Duration, noneZero bool, field func(*Config) *time.Duration) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) (err error) { *field(c), err = ParseTime(a[0]); return err },
		def: func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string {
			if noneZero && *field(c) == 0 {
				return [][]string{{"none"}}
			}
			return [][]string{{formatSeconds(*field(c))}}
		}}
}

// pathKW is a single path where "none" (any case) means unset.
func pathKW(name string, field func(*Config) *string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			switch {
			case a[0] == "":
				return errors.New("empty path")
			case strings.EqualFold(a[0], "none"):
				*field(c) = ""
			default:
				*field(c) = a[0]
			}
			return nil
		},
		def: func(c *Config) { *field(c) = "" },
		print: func(c *Config) [][]string {
			return [][]string{{noneIfEmpty(*field(c))}}
		}}
}

// stringKW is a single word with a default, printed as is.
func stringKW(name, def string, field func(*Config) *string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			if a[0] == "" {
				return errors.New("empty argument")
			}
			*field(c) = a[0]
			return nil
		},
		def:   func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string { return [][]string{{*field(c)}} }}
}

// commandKW takes the rest of the line (ForceCommand,
// AuthorizedKeysCommand); "none" means unset. absolute requires an
// absolute path, as sshd does for the *Command keywords.
func commandKW(name string, absolute bool, field func(*Config) *string) *keyword {
	kw := &keyword{name: name,
		set: func(c *Config, a []string) error {
			cmd := strings.TrimSpace(a[0])
			switch {
			case cmd == "":
				return errors.New("missing argument")
			case strings.EqualFold(cmd, "none"):
				cmd = ""
			case absolute && cmd[0] != '/':
				return fmt.Errorf("%q must be an absolute path", cmd)
			}
			*field(c) = cmd
			return nil
		},
		def:   func(c *Config) { *field(c) = "" },
		print: func(c *Config) [][]string { return [][]string{{noneIfEmpty(*field(c))}} }}
	return kw.restOfLine()
}

// enumKW is one of choices (any case); aliases map other spellings.
// printAs, when set, maps a value to the spelling -T prints.
func enumKW(name, def string, field func(*Config) *string, choices []string, aliases map[string]string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			v := a[0]
			if alias, ok := aliases[strings.ToLower(v)]; ok {
				v = alias
			}
			for _, ch := range choices {
				if strings.EqualFold(ch, v) {
					*field(c) = ch
					return nil
				}
			}
			return fmt.Errorf("%q is not one of %s", a[0], strings.Join(choices, ", "))
		},
		def: func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string {
			return [][]string{{*field(c)}}
		}}
}

func algKW(name string, list AlgList, field func(*Config) *[]string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) (err error) {
			var warns []string
			*field(c), warns, err = resolveAlgList(list, a[0])
			c.lineWarn = append(c.lineWarn, warns...)
			return err
		},
		// CryptoProfile is set before defaults are filled in, whatever the
		// order of the lines (it is offload's own, at the table's end).
		def: func(c *Config) { *field(c) = profileDefaults(c.CryptoProfile, list) },
		print: func(c *Config) [][]string {
			return [][]string{{strings.Join(*field(c), ",")}}
		}}
}

// wordsKW takes several words on one line, the first line winning (as
// sshd's AuthenticationMethods, PermitOpen, SetEnv, ChannelTimeout).
// check validates the words; empty is printed as none (or omitted when
// none is "").
func wordsKW(name, none string, field func(*Config) *[]string, check func([]string) error) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: -1,
		set: func(c *Config, a []string) error {
			if err := check(a); err != nil {
				return err
			}
			if len(a) == 1 && strings.EqualFold(a[0], none) {
				*field(c) = nil
				return nil
			}
			*field(c) = slices.Clone(a)
			return nil
		},
		def: func(c *Config) { *field(c) = nil },
		print: func(c *Config) [][]string {
			if len(*field(c)) == 0 {
				if none == "" {
					return nil
				}
				return [][]string{{none}}
			}
			return [][]string{*field(c)}
		}}
}

// listKW accumulates words over lines (AllowUsers, AcceptEnv): one -T
// line per word. check validates one word.
func listKW(name, what string, field func(*Config) *[]string, check func(string) error) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: -1, repeat: accumulate,
		set: func(c *Config, a []string) error {
			for _, w := range a {
				if w == "" {
					return fmt.Errorf("empty %s", what)
				}
				if err := check(w); err != nil {
					return err
				}
			}
			if err := checkCount(len(*field(c))+len(a), maxListEntries, name+" entries"); err != nil {
				return err
			}
			*field(c) = appendNew(*field(c), a...)
			return nil
		},
		def:   func(c *Config) { *field(c) = nil },
		print: eachLine(func(c *Config) []string { return *field(c) })}
}

func eachLine(values func(*Config) []string) func(*Config) [][]string {
	return func(c *Config) [][]string {
		var out [][]string
		for _, v := range values(c) {
			out = append(out, []string{v})
		}
		return out
	}
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func defaultIfEmpty(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}

// Limits on accumulating keywords, so that no file makes the server
// build huge tables (sshd caps ports at 256 too).
const (
	maxPorts       = 256
	maxListen      = 256
	maxHostKeys    = 64
	maxTokens      = 64
	maxListEntries = 4096 // AllowUsers, AcceptEnv, ...
)

func checkCount(n, limit int, what string) error {
	if n > limit {
		return fmt.Errorf("more than %d %s", limit, what)
	}
	return nil
}

func appendNew(dst []string, names ...string) []string {
	for _, n := range names {
		if !slices.Contains(dst, n) {
			dst = append(dst, n)
		}
	}
	return dst
}

func appendInt(s []int, v int) []int {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
