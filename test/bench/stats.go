package main

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratio is a/b, or NaN when either is missing or b is zero.
func ratio(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30},
	{"B", 1},
}

// parseSize reads "1GiB", "64MiB", "512K", "1000000".
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("bench: size %q: want a positive count of bytes like 64MiB or 1GiB", s)
	}
	return n * mult, nil
}

// formatSize prints a byte count in the largest binary unit that divides
// it, as parseSize reads it.
func formatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// checkLoopback refuses any address that is not a loopback IP literal:
// the harness starts servers that accept a throwaway key and must never
// listen, or send a benchmark's load, anywhere else.
func checkLoopback(addr string) (netip.Addr, error) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("bench: address %q: want a loopback IP literal such as 127.0.0.1 (names are refused)", addr)
	}
	if !a.IsLoopback() {
		return netip.Addr{}, fmt.Errorf("bench: refusing non-loopback address %s: the benchmark runs servers with a throwaway key and only on loopback", a)
	}
	return a, nil
}

// parseInts reads a comma list of positive integers ("1,2,4,8").
func parseInts(s string, max int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > max {
			return nil, fmt.Errorf("bench: %q in %q is not a count between 1 and %d", f, s, max)
		}
		out = append(out, n)
	}
	return out, nil
}
