package account

import (
	"net/netip"
	"strconv"
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
	if p, isNet, ok := ParseNetwork(e); isNet {
		if !ok {
			return false, badEntry // too long, or host bits set: OpenSSH's inconsistent mask
		}
		return addr.IsValid() && p.Contains(addr), matched
	}
	if a, err := netip.ParseAddr(e); err == nil {
		return addr.IsValid() && a.Unmap() == addr, matched
	}
	return addr.IsValid() && MatchPattern(addr.String(), e), matched
}

// ParseNetwork reads an address-list entry "address/length" as sshd
// does: isNet when it is an address, '/' and a decimal length up to 128
// (leading zeros allowed); ok when that length fits the family and
// leaves no host bits set. Any other entry with '/' ("x/8",
// "10.0.0.0/", "10.0.0.0/200") is not a network but a wildcard pattern.
func ParseNetwork(e string) (p netip.Prefix, isNet, ok bool) {
	a, m, slash := strings.Cut(e, "/")
	if !slash || m == "" || len(m) > 3 || strings.Trim(m, "0123456789") != "" {
		return netip.Prefix{}, false, false
	}
	addr, err := netip.ParseAddr(a)
	n, _ := strconv.Atoi(m)
	if err != nil || n > 128 {
		return netip.Prefix{}, false, false
	}
	p = netip.PrefixFrom(addr.WithZone(""), n)
	return p, true, p.IsValid() && p.Masked() == p
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
