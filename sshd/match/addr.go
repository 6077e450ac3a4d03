package match

import (
	"net/netip"
	"strconv"
	"strings"
)

// Addrs matches addr against a comma-separated address list (OpenSSH's
// addr_match_list): networks, addresses or wildcard patterns on the
// address text, each optionally negated. An invalid addr matches no
// entry, but the list is still checked, so Addrs(netip.Addr{}, list)
// validates a list: Bad for an empty entry or a network with a bad mask.
func Addrs(addr netip.Addr, list string) Result {
	got := NoMatch
	for _, e := range strings.Split(list, ",") {
		e, neg := strings.CutPrefix(e, "!")
		ok, valid := addrEntry(addr, e)
		switch {
		case !valid:
			return Bad
		case ok && neg:
			return Negated
		case ok:
			got = Matched
		}
	}
	return got
}

// addrEntry matches one entry of an address list; valid is false for an
// empty entry or a network with a bad mask.
func addrEntry(addr netip.Addr, e string) (ok, valid bool) {
	if e == "" {
		return false, false
	}
	if p, isNet, good := ParseNetwork(e); isNet {
		return good && addr.IsValid() && p.Contains(addr), good
	}
	if a, err := netip.ParseAddr(e); err == nil {
		return addr.IsValid() && a.Unmap() == addr, true
	}
	return addr.IsValid() && Glob(addr.String(), e), true
}

// ParseNetwork reads an address-list entry "address/length" as sshd
// does: isNet when it is an address, '/' and a decimal length up to 128
// (at most three digits, leading zeros allowed); ok when that length
// fits the family and leaves no host bits set. Any other entry with '/'
// ("x/8", "10.0.0.0/", "10.0.0.0/200") is not a network but a pattern.
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

// maxCIDREntry bounds an entry of a source-address list as OpenSSH does
// (INET6_ADDRSTRLEN and a mask length) before it is parsed.
const maxCIDREntry = 46 + 3

// CIDRs matches addr against a certificate source-address list (OpenSSH's
// addr_match_cidr_list): addresses and networks, without negation or
// patterns. An entry that is neither, or holds other characters than
// hexadecimal digits, '.', ':' and '/', makes the list Bad.
func CIDRs(addr netip.Addr, list string) Result {
	got := NoMatch
	for _, e := range strings.Split(list, ",") {
		p, ok := cidrEntry(e)
		if !ok {
			return Bad
		}
		if addr.IsValid() && p.Contains(addr) {
			got = Matched
		}
	}
	return got
}

func cidrEntry(e string) (netip.Prefix, bool) {
	if e == "" || len(e) > maxCIDREntry || strings.Trim(e, "0123456789abcdefABCDEF.:/") != "" {
		return netip.Prefix{}, false
	}
	if p, isNet, ok := ParseNetwork(e); isNet {
		return p, ok
	}
	a, err := netip.ParseAddr(e)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), true
}
