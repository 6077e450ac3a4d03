package account

import "net/netip"

// Results of MatchList and MatchAddrList, as OpenSSH's pattern-list
// functions return them.
const (
	ListNoMatch  = noMatch  // no entry matched
	ListMatched  = matched  // a plain entry matched
	ListNegated  = negated  // a negated entry matched: that decides
	ListBadEntry = badEntry // an entry is unusable (empty, a CIDR prefix with host bits set)
)

// MatchList is OpenSSH's match_pattern_list: s against a comma-separated
// list of MatchPattern patterns, each optionally negated with '!'; fold
// lowers both (host names). sshd's Match User, Host and RDomain use it.
func MatchList(s, list string, fold bool) int { return matchList(s, list, fold) }

// MatchAddrList is OpenSSH's addr_match_list: addr against a list of
// CIDR prefixes, addresses or wildcard patterns on the address text, each
// optionally negated. sshd's Match Address and LocalAddress use it. An
// invalid addr matches no entry but the list is still checked.
func MatchAddrList(addr netip.Addr, list string) int { return matchAddrList(addr, list) }
