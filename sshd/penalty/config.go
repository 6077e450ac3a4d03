package penalty

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/offload/offload/internal/sshtime"
)

// Kind is an event a source is penalised for.
type Kind int

// Kinds of penalties, as OpenSSH's PerSourcePenalties keywords.
const (
	Crash            Kind = iota // the connection's pre-auth process crashed
	AuthFail                     // the client left after failed authentication attempts
	NoAuth                       // the client left without attempting authentication
	GraceExceeded                // LoginGraceTime passed without a login
	InvalidUser                  // the client tried to log in as an invalid user
	RefuseConnection             // RefuseConnection refused the client
	numKinds
)

// kinds is the table of penalty kinds: keyword, OpenSSH 10's default
// duration and the reason logged and given to refused clients.
var kinds = [numKinds]struct {
	word   string
	def    time.Duration
	reason string
}{
	Crash:            {"crash", 90 * time.Second, "penalty: caused crash"},
	AuthFail:         {"authfail", 5 * time.Second, "penalty: failed authentication"},
	NoAuth:           {"noauth", 1 * time.Second, "penalty: connections without attempting authentication"},
	GraceExceeded:    {"grace-exceeded", 10 * time.Second, "penalty: exceeded LoginGraceTime"},
	InvalidUser:      {"invaliduser", 5 * time.Second, "penalty: attempted authentication by invalid user"},
	RefuseConnection: {"refuseconnection", 10 * time.Second, "penalty: connection prohibited by RefuseConnection"},
}

func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	return kinds[k].word
}

// Overflow is what happens when the penalty table of an address family
// is full.
type Overflow int

// Overflow modes.
const (
	// Permissive drops the penalties that expire soonest (the default).
	Permissive Overflow = iota
	// DenyAll refuses every source that is not exempt until a penalty
	// expires.
	DenyAll
)

// Config is PerSourcePenalties, PerSourcePenaltyExemptList,
// PerSourceNetBlockSize and PerSourceMaxStartups. Start from Defaults.
type Config struct {
	// Disabled turns penalties off (PerSourcePenalties no).
	Disabled bool
	// Durations of each Kind.
	Durations [numKinds]time.Duration
	// Min is the penalty that must accrue before a source is refused;
	// Max the most a source accrues.
	Min, Max time.Duration
	// MaxSources4 and MaxSources6 bound the sources tracked per family.
	MaxSources4, MaxSources6 int
	// Overflow4 and Overflow6 are the overflow modes per family.
	Overflow4, Overflow6 Overflow
	// Exempt lists addresses, CIDR prefixes and wildcard patterns that
	// are never penalised (PerSourcePenaltyExemptList).
	Exempt []string
	// Bits4 and Bits6 group sources into networks of this prefix length
	// (PerSourceNetBlockSize).
	Bits4, Bits6 int
	// MaxStartups is PerSourceMaxStartups: the unauthenticated
	// connections one network may hold at once (0: no limit).
	MaxStartups int
}

// Defaults returns OpenSSH 10's defaults: penalties on, crash 90s,
// authfail 5s, noauth 1s, grace-exceeded 10s, invaliduser 5s,
// refuseconnection 10s, min 15s, max 10m, 65536 sources per family,
// permissive overflow, net blocks 32:128, no per-source startup limit.
func Defaults() Config {
	c := Config{Min: 15 * time.Second, Max: 10 * time.Minute, MaxSources4: 65536, MaxSources6: 65536, Bits4: 32, Bits6: 128}
	for k := range kinds {
		c.Durations[k] = kinds[k].def
	}
	return c
}

// ParsePenalties applies the arguments of a PerSourcePenalties line to c:
// "yes", "no", or keyword:value pairs ("crash:2m", "max-sources4:1024",
// "overflow:deny-all"). Durations are OpenSSH time formats (90, 90s, 2m,
// 1h30m) or Go durations.
func ParsePenalties(c Config, args []string) (Config, error) {
	if len(args) == 1 && (args[0] == "yes" || args[0] == "no") {
		c.Disabled = args[0] == "no"
		return c, nil
	}
	for _, a := range args {
		if err := c.parseOne(a); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c *Config) parseOne(a string) error {
	key, val, ok := strings.Cut(a, ":")
	if !ok || val == "" {
		return fmt.Errorf("penalty: PerSourcePenalties %q: want keyword:value", a)
	}
	for k := range kinds {
		if key == kinds[k].word {
			d, err := ParseDuration(val)
			c.Durations[k] = d
			return wrapArg(a, err)
		}
	}
	var err error
	switch key {
	case "min":
		c.Min, err = ParseDuration(val)
	case "max":
		c.Max, err = ParseDuration(val)
	case "max-sources4":
		c.MaxSources4, err = positive(val)
	case "max-sources6":
		c.MaxSources6, err = positive(val)
	case "overflow":
		c.Overflow4, err = parseOverflow(val)
		c.Overflow6 = c.Overflow4
	case "overflow6":
		c.Overflow6, err = parseOverflow(val)
	default:
		return fmt.Errorf("penalty: PerSourcePenalties: unknown keyword %q", key)
	}
	return wrapArg(a, err)
}

func wrapArg(a string, err error) error {
	if err != nil {
		return fmt.Errorf("penalty: PerSourcePenalties %q: %w", a, err)
	}
	return nil
}

func positive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("not a positive number")
	}
	return n, nil
}

func parseOverflow(s string) (Overflow, error) {
	switch s {
	case "permissive":
		return Permissive, nil
	case "deny-all":
		return DenyAll, nil
	}
	return 0, fmt.Errorf("overflow mode must be permissive or deny-all")
}

// ParseDuration reads OpenSSH's time format: a number of seconds, or
// numbers with units s, m, h, d, w concatenated ("1h30m"); a Go duration
// ("1.5s") is accepted too. Either is at most a year.
func ParseDuration(s string) (time.Duration, error) {
	d, err := sshtime.Parse(s)
	if err == nil {
		return d, nil
	}
	if g, gerr := time.ParseDuration(s); gerr == nil && g >= 0 && g <= sshtime.Max {
		return g, nil
	}
	return 0, fmt.Errorf("bad time %q", s)
}

// ParseNetBlockSize reads PerSourceNetBlockSize: "bits4" or "bits4:bits6".
func ParseNetBlockSize(s string) (bits4, bits6 int, err error) {
	a, b, two := strings.Cut(s, ":")
	bits4, err = strconv.Atoi(a)
	if err != nil || bits4 < 0 || bits4 > 32 {
		return 0, 0, fmt.Errorf("penalty: PerSourceNetBlockSize %q: IPv4 bits must be 0 to 32", s)
	}
	bits6 = 128
	if two {
		bits6, err = strconv.Atoi(b)
		if err != nil || bits6 < 0 || bits6 > 128 {
			return 0, 0, fmt.Errorf("penalty: PerSourceNetBlockSize %q: IPv6 bits must be 0 to 128", s)
		}
	}
	return bits4, bits6, nil
}

// Validate checks the exempt list and the bounds.
func (c *Config) Validate() error {
	for _, e := range c.Exempt {
		if _, err := parseExempt(e); err != nil {
			return err
		}
	}
	if c.Bits4 < 0 || c.Bits4 > 32 || c.Bits6 < 0 || c.Bits6 > 128 {
		return fmt.Errorf("penalty: net block sizes %d:%d out of range", c.Bits4, c.Bits6)
	}
	if c.MaxSources4 < 1 || c.MaxSources6 < 1 || c.MaxStartups < 0 {
		return fmt.Errorf("penalty: max-sources and PerSourceMaxStartups must be positive")
	}
	return nil
}

// exempt is one PerSourcePenaltyExemptList entry.
type exempt struct {
	prefix  netip.Prefix
	pattern string // when not a prefix or address
}

func parseExempt(e string) (exempt, error) {
	if p, err := netip.ParsePrefix(e); err == nil {
		if p.Masked() != p {
			return exempt{}, fmt.Errorf("penalty: PerSourcePenaltyExemptList %q: host bits set", e)
		}
		return exempt{prefix: p}, nil
	}
	if strings.Contains(e, "/") || e == "" {
		return exempt{}, fmt.Errorf("penalty: PerSourcePenaltyExemptList %q: bad prefix", e)
	}
	if a, err := netip.ParseAddr(e); err == nil {
		return exempt{prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	return exempt{pattern: e}, nil
}
