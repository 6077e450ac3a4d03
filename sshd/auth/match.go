package auth

import (
	"net"
	"net/netip"
	"strings"
)

// matchWildcard reports whether s matches pattern, where '*' matches any
// run of bytes and '?' any one byte. It runs in O(len(s)·len(pattern))
// at worst: on a mismatch it resumes after the last '*' only.
func matchWildcard(s, pattern string) bool {
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

// matchHostList matches a comma-separated list of address patterns (as in
// authorized_keys from= and the host part of AllowUsers) against addr:
// each entry is an address, a CIDR prefix or a wildcard pattern, and a
// leading '!' negates it. The result is true when some entry matches and
// no negated entry does. A malformed prefix or an invalid addr never
// matches. Host names are not looked up, so only addresses can match.
func matchHostList(list string, addr netip.Addr) bool {
	if !addr.IsValid() {
		return false
	}
	matched := false
	for _, entry := range strings.Split(list, ",") {
		negated := strings.HasPrefix(entry, "!")
		entry = strings.TrimPrefix(entry, "!")
		ok, valid := matchHost(entry, addr)
		if !valid {
			return false
		}
		if ok && negated {
			return false
		}
		matched = matched || ok
	}
	return matched
}

// matchHost matches one entry; valid is false for an unusable entry.
func matchHost(entry string, addr netip.Addr) (ok, valid bool) {
	if entry == "" {
		return false, false
	}
	if strings.Contains(entry, "/") {
		p, err := netip.ParsePrefix(entry)
		if err != nil || p.Masked() != p {
			return false, false
		}
		return p.Contains(addr), true
	}
	if a, err := netip.ParseAddr(entry); err == nil {
		return a.Unmap() == addr, true
	}
	return matchWildcard(strings.ToLower(addr.String()), strings.ToLower(entry)), true
}

// matchSourceAddress checks a certificate source-address critical option:
// a comma-separated list of addresses and CIDR prefixes, without patterns
// or negation. A malformed list never matches.
func matchSourceAddress(list string, addr netip.Addr) bool {
	if !addr.IsValid() {
		return false
	}
	matched := false
	for _, entry := range strings.Split(list, ",") {
		if strings.ContainsAny(entry, "*?!") {
			return false
		}
		ok, valid := matchHost(entry, addr)
		if !valid {
			return false
		}
		matched = matched || ok
	}
	return matched
}

// matchAllowUsers reports whether user at addr matches one of the
// AllowUsers patterns "user" or "user@host".
func matchAllowUsers(patterns []string, user string, addr netip.Addr) bool {
	for _, p := range patterns {
		up, host, hasHost := strings.Cut(p, "@")
		if !matchWildcard(user, up) {
			continue
		}
		if !hasHost || matchHostList(host, addr) {
			return true
		}
	}
	return false
}

// remoteAddr extracts the client's IP address (unmapped) and port; both
// are zero for addresses that are not IP.
func remoteAddr(a net.Addr) (netip.Addr, uint16) {
	switch a := a.(type) {
	case *net.TCPAddr:
		ap := a.AddrPort()
		return ap.Addr().Unmap(), ap.Port()
	case nil:
		return netip.Addr{}, 0
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, 0
	}
	return ap.Addr().Unmap(), ap.Port()
}
