package auth

import (
	"net"
	"testing"
)

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
