package auth

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/offload/offload/sshd/match"
)

// FuzzMatchEquivalence checks sshd/match against this package's
// matchers on the same inputs before they are replaced by it.
func FuzzMatchEquivalence(f *testing.F) {
	f.Add("192.0.2.0/24,!192.0.2.1,10.*", "192.0.2.7", "a*")
	f.Add("2001:DB8::*,10.0.0.0/08", "2001:db8::1", "*?*?*b")
	f.Add("bogus,192.0.2.7", "192.0.2.7", "")
	f.Fuzz(func(t *testing.T, list, addr, pat string) {
		// The one intended difference: a '*' in the string met by a '*' in
		// the pattern was taken as a literal here, so "*x" did not match
		// "*"; in OpenSSH (and sshd/match) a pattern's '*' is always a
		// wildcard.
		a, _ := netip.ParseAddr(addr)
		a = a.Unmap()
		if matchWildcard(list, pat) != match.Glob(list, pat) && !strings.Contains(list, "*") {
			t.Fatalf("matchWildcard(%q, %q) differs", list, pat)
		}
		if old, got := matchHostList(list, a), match.HostAndIP("", a, list); old != got && !fromDiffers(list) {
			t.Fatalf("matchHostList(%q, %v) = %v, match.HostAndIP %v", list, a, old, got)
		}
		old, got := matchSourceAddress(list, a), match.CIDRs(a, list) == match.Matched
		if old != got && (got || match.CIDRs(netip.Addr{}, list) != match.Bad) {
			t.Fatalf("matchSourceAddress(%q, %v) = %v, match.CIDRs %v", list, a, old, got)
		}
	})
}

// fromDiffers reports whether list holds an entry with '/' on which this
// package and OpenSSH (sshd/match) disagree: here any entry with '/' had
// to be a masked prefix as netip.ParsePrefix reads it, or the list
// matched nothing; OpenSSH reads "address/length" (leading zeros allowed,
// a zone ignored) as a network and anything else with '/' as a pattern.
func fromDiffers(list string) bool {
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimPrefix(e, "!")
		if !strings.Contains(e, "/") {
			continue
		}
		p, err := netip.ParsePrefix(e)
		_, isNet, ok := match.ParseNetwork(e)
		oldOK := err == nil && p.Masked() == p
		if oldOK != (!isNet || ok) || oldOK && !isNet {
			return true
		}
	}
	return false
}
