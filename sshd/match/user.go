package match

import (
	"net/netip"
	"strings"
)

// HostAndIP matches a client against a host list (OpenSSH's
// match_host_and_ip), as authorized_keys from= and AllowUsers do: the
// list is matched as an address list against addr and as a case-folded
// pattern list against host, which is the address's text when empty.
// A negated match of either, or a Bad list, refuses; otherwise a match of
// either accepts. A client with neither a host name nor an address
// matches nothing.
func HostAndIP(host string, addr netip.Addr, list string) bool {
	ip := Addrs(addr, list)
	if ip == Bad || ip == Negated {
		return false
	}
	if host == "" {
		if !addr.IsValid() {
			return false
		}
		host = addr.String()
	}
	h := List(host, list, true)
	return h != Negated && (h == Matched || ip == Matched)
}

// User matches an AllowUsers or DenyUsers pattern, "user" or
// "user@hostlist" (OpenSSH's match_user): the user part is a Glob
// pattern on name, the host list as in HostAndIP.
func User(name, host string, addr netip.Addr, pattern string) bool {
	up, hosts, ok := strings.Cut(pattern, "@")
	if !Glob(name, up) {
		return false
	}
	return !ok || HostAndIP(host, addr, hosts)
}

// ValidUser reports whether a "user@hostlist" pattern is usable: sshd
// refuses to start on a host list that is Bad (an empty entry, a network
// with host bits set).
func ValidUser(pattern string) bool {
	_, hosts, ok := strings.Cut(pattern, "@")
	return !ok || Addrs(netip.Addr{}, hosts) != Bad
}
