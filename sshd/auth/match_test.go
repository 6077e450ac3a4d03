package auth

import (
	"net"
	"net/netip"
	"testing"
)

func TestMatchWildcard(t *testing.T) {
	for _, tc := range []struct {
		s, pattern string
		want       bool
	}{
		{"", "", true}, {"", "*", true}, {"a", "", false}, {"abc", "abc", true},
		{"abc", "a?c", true}, {"abc", "a*", true}, {"abc", "*c", true}, {"abc", "*b*", true},
		{"abc", "*d*", false}, {"abc", "??", false}, {"abc", "???", true}, {"abc", "a*b*c", true},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "*a*a*a*a*a*a*a*a*c", false},
		{"192.168.1.20", "192.168.*", true}, {"mississippi", "m*iss*ppi", true}, {"ab", "a*b*", true},
	} {
		if got := matchWildcard(tc.s, tc.pattern); got != tc.want {
			t.Errorf("matchWildcard(%q, %q) = %v", tc.s, tc.pattern, got)
		}
	}
}

func TestMatchHostList(t *testing.T) {
	v4 := netip.MustParseAddr("192.0.2.10")
	v6 := netip.MustParseAddr("2001:db8::7")
	for _, tc := range []struct {
		list string
		addr netip.Addr
		want bool
	}{
		{"192.0.2.10", v4, true}, {"192.0.2.11", v4, false}, {"192.0.2.0/24", v4, true},
		{"192.0.2.0/33", v4, false}, {"192.0.2.1/24", v4, false}, {"10.0.0.0/8,192.0.2.*", v4, true},
		{"*,!192.0.2.10", v4, false}, {"!192.0.2.10,*", v4, false}, {"!10.0.0.1,*", v4, true},
		{"!10.0.0.1", v4, false}, {"2001:db8::/32", v6, true}, {"2001:DB8::*", v6, true},
		{"2001:db8::/32", v4, false}, {"host.example.com", v4, false}, {"", v4, false},
		{"192.0.2.10,", v4, false}, {"*", netip.Addr{}, false}, {"::ffff:192.0.2.10", v4, true},
	} {
		if got := matchHostList(tc.list, tc.addr); got != tc.want {
			t.Errorf("matchHostList(%q, %v) = %v", tc.list, tc.addr, got)
		}
	}
}

func TestMatchSourceAddress(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.10")
	for list, want := range map[string]bool{
		"192.0.2.10": true, "192.0.2.0/24,10.0.0.1": true, "10.0.0.1": false, "192.0.2.*": false,
		"!192.0.2.10": false, "": false, "bogus": false,
	} {
		if got := matchSourceAddress(list, a); got != want {
			t.Errorf("matchSourceAddress(%q) = %v", list, got)
		}
	}
}

func TestMatchAllowUsers(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.10")
	for _, tc := range []struct {
		patterns []string
		user     string
		want     bool
	}{
		{[]string{"alice"}, "alice", true}, {[]string{"alice"}, "alicex", false},
		{[]string{"a*"}, "alice", true}, {[]string{"?lice"}, "alice", true},
		{[]string{"alice@192.0.2.10"}, "alice", true}, {[]string{"alice@10.*"}, "alice", false},
		{[]string{"bob", "*@192.0.2.0/24"}, "alice", true}, {[]string{}, "alice", false},
	} {
		if got := matchAllowUsers(tc.patterns, tc.user, a); got != tc.want {
			t.Errorf("matchAllowUsers(%q, %q) = %v", tc.patterns, tc.user, got)
		}
	}
}

func TestRemoteAddr(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		ip   string
		port uint16
	}{
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 22}, "192.0.2.1", 22},
		{&net.UDPAddr{IP: net.ParseIP("2001:db8::1"), Port: 5}, "2001:db8::1", 5},
		{pipeAddr{}, "invalid IP", 0},
		{nil, "invalid IP", 0},
	} {
		ip, port := remoteAddr(tc.addr)
		if ip.String() != tc.ip || port != tc.port {
			t.Errorf("remoteAddr(%v) = %v %d", tc.addr, ip, port)
		}
	}
}
