package config

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/offload/offload/internal/sshtime"
)

// parseBool accepts "yes" and "no", as sshd does.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, fmt.Errorf("%q is not yes or no", s)
}

func formatBool(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// parseInt parses a decimal integer within [lo, hi].
func parseInt(s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is out of range [%d, %d]", n, lo, hi)
	}
	return n, nil
}

// ParseTime parses an sshd time: a sequence of numbers each followed by an
// optional unit s, m, h, d or w (either case); a number without a unit is
// seconds. "120", "2m", "1h30m" and "1w2d" are accepted, up to a year.
// "none" is zero.
func ParseTime(s string) (time.Duration, error) {
	if strings.EqualFold(s, "none") {
		return 0, nil
	}
	return sshtime.Parse(s)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// formatSeconds prints a duration as whole seconds, as sshd -T does.
func formatSeconds(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10)
}

var sizeUnits = map[byte]int64{'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}

// ParseSize parses a byte count with an optional K, M or G suffix (powers
// of 1024, either case) and bounds it by max.
func ParseSize(s string, max int64) (int64, error) {
	if s == "" {
		return 0, errors.New("empty size")
	}
	mult := int64(1)
	num := s
	if u, ok := sizeUnits[lower(s[len(s)-1])]; ok {
		mult, num = u, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (like 65536, 512K, 16M, 1G)", s)
	}
	if n > math.MaxInt64/mult || n*mult > max {
		return 0, fmt.Errorf("%q is larger than %d bytes", s, max)
	}
	return n * mult, nil
}

// MaxStartups is sshd's start:rate:full: once Start unauthenticated
// connections are pending, new ones are refused with probability Rate
// percent, rising linearly to 100% at Full.
type MaxStartups struct {
	Start, Rate, Full int
}

func (m MaxStartups) String() string { return fmt.Sprintf("%d:%d:%d", m.Start, m.Rate, m.Full) }

// Drop decides, as sshd does, whether a new connection is refused when
// pending unauthenticated connections are already open: never below
// Start, always from Full on, and in between with a probability rising
// linearly from Rate percent. percent returns a uniform integer in
// [0, 100); nil means math/rand/v2.
func (m MaxStartups) Drop(pending int, percent func() int) bool {
	if pending < m.Start || m.Full <= 0 {
		return false
	}
	if pending >= m.Full {
		return true
	}
	if percent == nil {
		percent = func() int { return rand.IntN(100) }
	}
	p := m.Rate + (100-m.Rate)*(pending-m.Start)/max(m.Full-m.Start, 1)
	return percent() < p
}

// ParseMaxStartups parses "start:rate:full" or a bare "full".
func ParseMaxStartups(s string) (MaxStartups, error) {
	parts := strings.Split(s, ":")
	switch len(parts) {
	case 1:
		n, err := parseInt(parts[0], 1, 1<<20)
		if err != nil {
			return MaxStartups{}, err
		}
		return MaxStartups{Start: n, Rate: 100, Full: n}, nil
	case 3:
	default:
		return MaxStartups{}, fmt.Errorf("%q is not start:rate:full", s)
	}
	var v [3]int
	limits := [3][2]int{{1, 1 << 20}, {1, 100}, {1, 1 << 20}}
	for i, p := range parts {
		n, err := parseInt(p, limits[i][0], limits[i][1])
		if err != nil {
			return MaxStartups{}, fmt.Errorf("%q: %w", s, err)
		}
		v[i] = n
	}
	m := MaxStartups{Start: v[0], Rate: v[1], Full: v[2]}
	if m.Start > m.Full {
		return MaxStartups{}, fmt.Errorf("%q: start %d is above full %d", s, m.Start, m.Full)
	}
	return m, nil
}

// RekeyLimit is the data and time after which the server starts a new key
// exchange; zero means the transport's default (the cipher's limit for
// bytes, transport.DefaultRekeyInterval for time).
type RekeyLimit struct {
	Bytes    int64
	Interval time.Duration
}

func (r RekeyLimit) String() string {
	return strconv.FormatInt(r.Bytes, 10) + " " + formatSeconds(r.Interval)
}

// minRekeyBytes: below 16 bytes re-keying would never end (sshd's
// "RekeyLimit too small").
const minRekeyBytes = 16

func parseRekeyLimit(args []string) (RekeyLimit, error) {
	var r RekeyLimit
	if args[0] != "default" && !strings.EqualFold(args[0], "none") {
		n, err := parseRekeyBytes(args[0])
		if err != nil {
			return r, err
		}
		r.Bytes = n
	}
	if len(args) > 1 && !strings.EqualFold(args[1], "default") {
		d, err := ParseTime(args[1])
		if err != nil {
			return r, err
		}
		r.Interval = d
	}
	return r, nil
}

// rekeyUnits are the scale letters of a RekeyLimit size, powers of 1024
// in either case, as sshd's: bytes, K, M, G, T, P and E.
const rekeyUnits = "bkmgtpe"

// parseRekeyBytes reads a RekeyLimit size as sshd does: a decimal
// number, a fraction allowed before a unit ("1.5G"; without a unit it
// is dropped), up to 2^63-1 bytes; 0 means the cipher's default, and
// anything else must be at least 16 bytes.
func parseRekeyBytes(s string) (int64, error) {
	num, scale := strings.TrimPrefix(s, "+"), int64(1)
	if num != "" {
		if i := strings.IndexByte(rekeyUnits, lower(num[len(num)-1])); i >= 0 {
			num, scale = num[:len(num)-1], int64(1)<<(10*i)
		}
	}
	whole, frac, _ := strings.Cut(num, ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		if strings.HasPrefix(s, "-") {
			return 0, fmt.Errorf("%q is below %d bytes", s, minRekeyBytes)
		}
		return 0, fmt.Errorf("%q is not a size (like 65536, 512K, 16M, 1.5G, 8G)", s)
	}
	v, ok := new(big.Int).SetString(whole, 10)
	if !ok {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	v.Mul(v, big.NewInt(scale))
	if frac != "" && scale > 1 { // the fraction's share of the unit, truncated
		f, _ := new(big.Int).SetString(frac, 10)
		f.Mul(f, big.NewInt(scale))
		f.Quo(f, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil))
		v.Add(v, f)
	}
	if !v.IsInt64() {
		return 0, fmt.Errorf("%q is larger than %d bytes", s, int64(math.MaxInt64))
	}
	n := v.Int64()
	if n != 0 && n < minRekeyBytes {
		return 0, fmt.Errorf("%q is below %d bytes", s, minRekeyBytes)
	}
	return n, nil
}

// checkHostPort checks a host:port listen or metrics address.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", s, err)
	}
	if _, err := parseInt(port, 0, 65535); err != nil {
		return fmt.Errorf("%q: port %w", s, err)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q: bad host", s)
	}
	return nil
}

// parseListenAddress accepts "host", "host:port", "[v6]:port" or a bare
// IPv6 address. The port is "" when none is given; port 0 asks the system
// for a free port (the daemon logs the one it got).
func parseListenAddress(s string) (host, port string, err error) {
	if ip := net.ParseIP(strings.Trim(s, "[]")); ip != nil && (strings.Count(s, ":") > 1 && !strings.Contains(s, "]:") || !strings.Contains(s, ":")) {
		return ip.String(), "", nil
	}
	if !strings.Contains(s, ":") {
		if s == "" || strings.ContainsAny(s, " /[]") {
			return "", "", fmt.Errorf("%q is not a host", s)
		}
		return s, "", nil
	}
	if err := checkHostPort(s); err != nil {
		return "", "", err
	}
	host, port, _ = net.SplitHostPort(s)
	return host, port, nil
}
