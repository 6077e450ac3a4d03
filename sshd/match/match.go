package match

import "strings"

// Result is the outcome of matching a list, as OpenSSH's list matchers
// return it.
type Result int

// Results of List, Patterns, Addrs and CIDRs.
const (
	NoMatch Result = 0  // no entry matched
	Matched Result = 1  // a plain entry matched and no negated one did
	Negated Result = -1 // a negated entry matched: that decides
	Bad     Result = -2 // an entry is unusable; the list matches nothing
)

// Glob reports whether s matches pattern, where '*' matches any run of
// bytes and '?' any one byte (OpenSSH's match_pattern). On a mismatch it
// resumes after the last '*' only, so it runs in O(len(s)·len(pattern)).
func Glob(s, pattern string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(pattern) && (pattern[pi] == '?' || pattern[pi] == s[si]):
			si++
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// AnyGlob reports whether s matches one of patterns (no negation).
func AnyGlob(s string, patterns []string) bool {
	for _, p := range patterns {
		if Glob(s, p) {
			return true
		}
	}
	return false
}

// List matches s against a comma-separated list of Glob patterns, each
// optionally negated with '!' (OpenSSH's match_pattern_list); fold
// lowers ASCII letters in both first (host names), as OpenSSH's tolower
// does: other letters are compared as they are (Unicode folding made
// "ı0" match "i0" but not its upper case "I0"). It returns NoMatch,
// Matched or Negated.
func List(s, list string, fold bool) Result {
	if fold {
		s, list = lowerASCII(s), lowerASCII(list)
	}
	return Patterns(s, strings.Split(list, ","))
}

// lowerASCII maps A-Z to a-z and leaves every other byte alone.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Patterns is List over a list already split into its entries.
func Patterns(s string, patterns []string) Result {
	got := NoMatch
	for _, p := range patterns {
		neg, isNeg := strings.CutPrefix(p, "!")
		if Glob(s, neg) {
			if isNeg {
				return Negated
			}
			got = Matched
		}
	}
	return got
}
