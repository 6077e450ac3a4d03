package account

import (
	"net/netip"
	"strings"
)

// MatchPattern reports whether s matches pattern, where '*' matches any
// run of bytes and '?' one byte (OpenSSH's match_pattern). It runs in
// O(len(s)·len(pattern)) at worst.
func MatchPattern(s, pattern string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && (pattern[pi] == '?' || pattern[pi] == s[si]):
			si++
			pi++
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
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

// Match results of a pattern list, as OpenSSH's: a negated entry that
// matches decides at once.
const (
	noMatch  = 0
	matched  = 1
	negated  = -1
	badEntry = -2
)

// matchList matches s against a comma-separated list of patterns with
// '!' negation; fold lowers both (host names).
func matchList(s, list string, fold bool) int {
	if fold {
		s, list = strings.ToLower(s), strings.ToLower(list)
	}
	got := noMatch
	for _, p := range strings.Split(list, ",") {
		neg := strings.HasPrefix(p, "!")
		if MatchPattern(s, strings.TrimPrefix(p, "!")) {
			if neg {
				return negated
			}
			got = matched
		}
	}
	return got
}

// matchAddrList is OpenSSH's addr_match_list: entries are CIDR prefixes
// or addresses, or else wildcard patterns on the address text, each
// optionally negated.
func matchAddrList(addr netip.Addr, list string) int {
	got := noMatch
	for _, e := range strings.Split(list, ",") {
		neg := strings.HasPrefix(e, "!")
		e = strings.TrimPrefix(e, "!")
		if e == "" {
			return badEntry
		}
		ok, r := matchAddrEntry(addr, e)
		if r == badEntry {
			return badEntry
		}
		if ok && neg {
			return negated
		}
		if ok {
			got = matched
		}
	}
	return got
}

func matchAddrEntry(addr netip.Addr, e string) (bool, int) {
	if p, err := netip.ParsePrefix(e); err == nil {
		if p.Masked() != p {
			return false, badEntry // host bits set: OpenSSH's inconsistent mask
		}
		return addr.IsValid() && p.Contains(addr), matched
	}
	if a, err := netip.ParseAddr(e); err == nil {
		return addr.IsValid() && a.Unmap() == addr, matched
	}
	return addr.IsValid() && MatchPattern(addr.String(), e), matched
}

// matchHostAndIP is OpenSSH's match_host_and_ip.
func matchHostAndIP(src Source, list string) bool {
	mip := matchAddrList(src.Addr.Unmap(), list)
	if mip == badEntry || mip == negated {
		return false
	}
	host := src.Host
	if host == "" {
		host = src.Addr.String()
	}
	mhost := matchList(host, list, true)
	return mhost != negated && (mhost == matched || mip == matched)
}

// MatchUser matches an AllowUsers/DenyUsers pattern, "user" or
// "user@hostlist", as OpenSSH's match_user.
func MatchUser(name string, src Source, pattern string) bool {
	up, hosts, ok := strings.Cut(pattern, "@")
	if !MatchPattern(name, up) {
		return false
	}
	return !ok || matchHostAndIP(src, hosts)
}

// ValidateUserPattern reports whether an AllowUsers/DenyUsers pattern is
// usable: OpenSSH refuses to start on a host part with a bad address
// entry (a CIDR prefix with host bits set, an empty entry).
func ValidateUserPattern(pattern string) bool {
	_, hosts, ok := strings.Cut(pattern, "@")
	return !ok || matchAddrList(netip.Addr{}, hosts) != badEntry
}
