// Package sshtime reads the time format of sshd_config: numbers, each
// with an optional unit, concatenated ("90", "2m", "1h30m", "1w2d").
//
// # Bounds
//
// Every value is at most [Max] (a year), far beyond any sane timeout and
// far from overflowing a time.Duration, so arithmetic on the result is
// safe.
package sshtime

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Max is the longest time accepted.
const Max = 366 * 24 * time.Hour

var units = map[byte]time.Duration{
	's': time.Second, 'm': time.Minute, 'h': time.Hour,
	'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour,
}

// Parse reads s: numbers of up to nine digits, each followed by an
// optional unit s, m, h, d or w (either case); a number without a unit is
// seconds.
func Parse(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("empty time")
	}
	var total time.Duration
	for rest := s; rest != ""; {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 9 {
			return 0, fmt.Errorf("%q is not a time (like 90, 2m, 1h30m)", s)
		}
		n, _ := strconv.Atoi(rest[:i])
		unit := time.Second
		if i < len(rest) {
			u, ok := units[rest[i]|0x20]
			if !ok {
				return 0, fmt.Errorf("%q: unknown time unit %q (use s, m, h, d, w)", s, rest[i])
			}
			unit, i = u, i+1
		}
		if time.Duration(n) > (Max-total)/unit {
			return 0, fmt.Errorf("%q is longer than a year", s)
		}
		total += time.Duration(n) * unit
		rest = rest[i:]
	}
	return total, nil
}
