package account

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/offload/offload/sshd/match"
)

// FuzzMatchEquivalence checks sshd/match against this package's
// matchers on the same inputs before they are replaced by it.
func FuzzMatchEquivalence(f *testing.F) {
	f.Add("al*", "alice", "192.0.2.0/24,!192.0.2.1,10.*", "192.0.2.7", "", true)
	f.Add("*", "root", "!*.example.com,10.0.0.0/08,x/8", "10.1.2.3", "h.EXAMPLE.com", false)
	f.Add("?", "", "", "", "", false)
	f.Fuzz(func(t *testing.T, pat, s, list, addr, host string, fold bool) {
		// The one intended difference: a '*' in the string met by a '*' in
		// the pattern was taken as a literal here, so "*x" did not match
		// "*"; in OpenSSH (and sshd/match) a pattern's '*' is always a
		// wildcard.
		if strings.Contains(s+host, "*") {
			return
		}
		a, _ := netip.ParseAddr(addr)
		if MatchPattern(s, pat) != match.Glob(s, pat) {
			t.Fatalf("MatchPattern(%q, %q) differs", s, pat)
		}
		if MatchList(s, list, fold) != int(match.List(s, list, fold)) {
			t.Fatalf("MatchList(%q, %q, %v) = %d, match.List %d", s, list, fold, MatchList(s, list, fold), match.List(s, list, fold))
		}
		if MatchAddrList(a.Unmap(), list) != int(match.Addrs(a.Unmap(), list)) {
			t.Fatalf("MatchAddrList(%v, %q) differs", a, list)
		}
		p1, n1, ok1 := ParseNetwork(list)
		p2, n2, ok2 := match.ParseNetwork(list)
		if p1 != p2 || n1 != n2 || ok1 != ok2 {
			t.Fatalf("ParseNetwork(%q) differs", list)
		}
		pattern := pat + "@" + list
		if ValidateUserPattern(pattern) != match.ValidUser(pattern) {
			t.Fatalf("ValidateUserPattern(%q) differs", pattern)
		}
		src := Source{Host: host, Addr: a.Unmap()}
		old, got := MatchUser(s, src, pattern), match.User(s, host, a.Unmap(), pattern)
		// The one intended difference: a client with neither host name nor
		// address matched "invalid IP" as its host name here; OpenSSH
		// (host and address NULL) and sshd/match match nothing then.
		if old != got && (host != "" || a.IsValid() || got) {
			t.Fatalf("MatchUser(%q, %+v, %q) = %v, match.User %v", s, src, pattern, old, got)
		}
	})
}
