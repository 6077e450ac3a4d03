// Package match is sshd's one pattern matcher, as OpenSSH's match.c and
// addrmatch.c: wildcard patterns, comma-separated pattern lists with
// negation, address lists with CIDR networks, and the user@host patterns
// of AllowUsers and DenyUsers. It is pure: no I/O, no name look-ups.
//
// # Patterns
//
// Glob matches a string against a pattern where '*' matches any run of
// bytes and '?' any one byte; every other byte matches itself. It runs in
// O(len(s)·len(pattern)) at worst, so a hostile pattern or name cannot
// make it slow. AcceptEnv, ChannelTimeout, AllowGroups, algorithm
// removal lists and PermitListen hosts are single patterns.
//
// # Lists
//
// List matches a comma-separated list such as "*.example.com,!bad.*":
// a negated entry ("!pattern") that matches decides at once (Negated);
// otherwise any matching entry gives Matched. Patterns does the same for
// a list already split into entries. Match User, Host, Group, RDomain
// and Version and PermitUserEnvironment use lists. As in OpenSSH an entry
// may be empty; it then matches only the empty string.
//
// # Addresses
//
// Addrs is OpenSSH's addr_match_list: each entry is a network
// ("192.0.2.0/24"), an address, or else a wildcard pattern on the
// address's text, and may be negated. A network whose mask is too long
// for its family or leaves host bits set, and an empty entry, make the
// whole list Bad, as sshd refuses such a list. An entry with '/' that is
// not address/length ("x/8", "10.0.0.0/200") is a pattern (ParseNetwork).
// Match Address and LocalAddress, and PerSourcePenaltyExemptList use it.
//
// CIDRs is addr_match_cidr_list, for a certificate's source-address
// option: addresses and networks only, no patterns or negation; any
// other entry makes the list Bad, so it never matches.
//
// # Hosts and users
//
// HostAndIP is match_host_and_ip, for authorized_keys from= and the host
// part of AllowUsers: the list is matched against both the client's
// address (as Addrs) and its host name (as List, case-folded); a negated
// match of either refuses. User matches "user" or "user@hostlist"
// patterns; ValidUser reports whether such a pattern's host list is
// usable, as sshd checks when it reads its configuration.
package match
