package match

import (
	"net/netip"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		s, pattern string
		want       bool
	}{
		{"", "", true}, {"", "*", true}, {"a", "", false}, {"abc", "abc", true}, {"", "?", false},
		{"abc", "a?c", true}, {"abc", "a*", true}, {"abc", "*c", true}, {"abc", "*b*", true},
		{"abc", "*d*", false}, {"abc", "??", false}, {"abc", "???", true}, {"abc", "a*b*c", true},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "*a*a*a*a*a*a*a*a*c", false}, {"ABC", "abc", false},
		{"mississippi", "m*iss*ppi", true}, {"*x", "*", true}, {"a*", "a*", true}, {"ab", "a*b*", true}, {"LC_ALL", "LC_*", true},
	} {
		if got := Glob(tc.s, tc.pattern); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v", tc.s, tc.pattern, got)
		}
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		s, list string
		fold    bool
		want    Result
	}{
		{"root", "*,!root", false, Negated}, {"alice", "*,!root", false, Matched},
		{"alice", "bob,carol", false, NoMatch}, {"Web1.Example.COM", "*.example.com", true, Matched},
		{"Web1.Example.COM", "*.example.com", false, NoMatch}, {"x", "!y", false, NoMatch},
		{"!y", "!!y", false, Negated}, {"", "a,", false, Matched},
	} {
		if got := List(tc.s, tc.list, tc.fold); got != tc.want {
			t.Errorf("List(%q, %q, %v) = %d, want %d", tc.s, tc.list, tc.fold, got, tc.want)
		}
	}
	if AnyGlob("x", nil) || !AnyGlob("LANG", []string{"LC_*", "LANG"}) {
		t.Error("AnyGlob")
	}
}

func TestAddrs(t *testing.T) {
	v4, v6 := netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("2001:db8::7")
	for _, tc := range []struct {
		addr netip.Addr
		list string
		want Result
	}{
		{v4, "10.0.0.0/08", Matched}, {v4, "10.0.0.0/8", Matched}, {v4, "!10.0.0.0/08", Negated},
		{v4, "10.0.0.0/200", NoMatch}, {v4, "10.1.2.3/x", NoMatch}, {v4, "x/8,10.1.*", Matched},
		{v4, "10.0.0.1/8", Bad}, {v4, "10.0.0.0/33", Bad}, {v4, "10.1.2.3,", Bad}, {v4, "!", Bad},
		{v4, "::ffff:10.1.2.3", Matched}, {v4, "10.1.2.3,!10.1.*", Negated}, {v6, "2001:db8::/32", Matched},
		{v6, "10.0.0.0/8", NoMatch}, {v6, "2001:db8::*", Matched}, {netip.Addr{}, "*", NoMatch},
		{netip.Addr{}, "10.0.0.1/8", Bad}, {v6, "fe80::%eth0/10,2001:db8::7", Matched},
	} {
		if got := Addrs(tc.addr, tc.list); got != tc.want {
			t.Errorf("Addrs(%v, %q) = %d, want %d", tc.addr, tc.list, got, tc.want)
		}
	}
}

func TestCIDRs(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.10")
	for list, want := range map[string]Result{
		"192.0.2.10": Matched, "192.0.2.0/24,10.0.0.1": Matched, "10.0.0.1": NoMatch, "192.0.2.*": Bad,
		"!192.0.2.10": Bad, "": Bad, "bogus": Bad, "abc,192.0.2.10": Bad, "192.0.2.1/24": Bad,
		"::ffff:192.0.2.10": Matched, "fe80::1%eth0": Bad, strings.Repeat("0", 50): Bad,
	} {
		if got := CIDRs(a, list); got != want {
			t.Errorf("CIDRs(%q) = %d, want %d", list, got, want)
		}
	}
}

func TestUser(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.10")
	for _, tc := range []struct {
		name, host, pattern string
		addr                netip.Addr
		want                bool
	}{
		{"alice", "", "alice", a, true}, {"alice", "", "alicex", a, false}, {"alice", "", "?lice", a, true},
		{"alice", "", "alice@192.0.2.10", a, true}, {"alice", "", "alice@10.*", a, false},
		{"alice", "", "*@192.0.2.0/24", a, true}, {"alice", "h.example.com", "a*@*.EXAMPLE.com", a, true},
		{"alice", "h.example.com", "a*@*,!h.example.com", a, false}, {"alice", "", "a*@*,!192.0.2.10", a, false},
		{"alice", "", "a*@*", netip.Addr{}, false}, {"alice", "", "alice", netip.Addr{}, true},
		{"alice", "", "alice@192.0.2.1/24,*", a, false}, {"x,!root", "", "*,!root", a, true},
		{"root", "", "*,!root", a, false}, // the user part is one pattern: ',' and '!' are plain
	} {
		if got := User(tc.name, tc.host, tc.addr, tc.pattern); got != tc.want {
			t.Errorf("User(%q, %q, %v, %q) = %v", tc.name, tc.host, tc.addr, tc.pattern, got)
		}
	}
	if ValidUser("a@10.0.0.1/8") || !ValidUser("a@10.0.0.0/8,!x*") || !ValidUser("a") || ValidUser("a@") {
		t.Error("ValidUser")
	}
}

// globRef is match_pattern as OpenSSH writes it, recursively: the
// reference Glob is checked against.
func globRef(s, p string) bool {
	for len(p) > 0 {
		switch {
		case p[0] == '*':
			p = strings.TrimLeft(p, "*")
			for i := 0; i <= len(s); i++ {
				if globRef(s[i:], p) {
					return true
				}
			}
			return false
		case len(s) == 0 || p[0] != '?' && p[0] != s[0]:
			return false
		}
		s, p = s[1:], p[1:]
	}
	return len(s) == 0
}

func FuzzGlob(f *testing.F) {
	f.Add("axxbyyc", "a*b*c")
	f.Add("aaaaaaaaab", "*a*a*?*c")
	f.Fuzz(func(t *testing.T, s, p string) {
		if len(s) > 64 || strings.Count(p, "*") > 6 {
			return // keeps the exponential reference fast
		}
		if got, want := Glob(s, p), globRef(s, p); got != want {
			t.Fatalf("Glob(%q, %q) = %v, reference %v", s, p, got, want)
		}
		if !strings.ContainsAny(s, "*?") && !Glob(s, s) {
			t.Fatalf("%q does not match itself", s)
		}
	})
}

func FuzzLists(f *testing.F) {
	f.Add("192.0.2.7", "192.0.2.0/24,!192.0.2.1,10.*", "web.example.com")
	f.Add("2001:db8::1", "2001:DB8::/32,fe80::1%x/10", "")
	f.Fuzz(func(t *testing.T, addr, list, host string) {
		a, _ := netip.ParseAddr(addr)
		a = a.Unmap()
		r := Addrs(a, list)
		// A matching negation decides before later entries are read, as
		// in OpenSSH, so a list that checks Bad may still give Negated.
		check := Addrs(netip.Addr{}, list)
		if check != NoMatch && check != Bad || (r == Bad) != (check == Bad && r != Negated) {
			t.Fatalf("Addrs(%v, %q) = %d but the list checks as %d", a, list, r, check)
		}
		if r == Negated && HostAndIP(host, a, list) {
			t.Fatalf("HostAndIP(%q, %v, %q) matched a negated address", host, a, list)
		}
		if c := CIDRs(a, list); c == Matched && (r != Matched || strings.ContainsAny(list, "!*?")) {
			t.Fatalf("CIDRs(%v, %q) matched where Addrs gives %d", a, list, r)
		}
		l := List(host, list, true)
		if l != List(upperASCII(host), upperASCII(list), true) {
			t.Fatalf("List(%q, %q) depends on case when folded", host, list)
		}
		if !ValidUser("u@"+list) != (check == Bad) {
			t.Fatalf("ValidUser(u@%q) disagrees with Addrs", list)
		}
	})
}

// upperASCII maps a-z to A-Z and leaves every other byte alone: List
// folds ASCII, as OpenSSH does.
func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
