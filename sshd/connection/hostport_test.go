package connection

import (
	"net"
	"testing"
)

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

// TestHostPortNotOnSocket: SSH_CONNECTION of a connection over pipes
// (sshd -i under a ProxyCommand) names the endpoints as OpenSSH's sshd
// does, "UNKNOWN 65535"; a TCP endpoint is its address and port.
func TestHostPortNotOnSocket(t *testing.T) {
	for _, tc := range []struct {
		a    net.Addr
		h, p string
	}{
		{nil, "UNKNOWN", "65535"},
		{pipeAddr("stdin"), "UNKNOWN", "65535"},
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}, "192.0.2.1", "22"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 2222}, "::1", "2222"},
	} {
		if h, p := hostPort(tc.a); h != tc.h || p != tc.p {
			t.Errorf("hostPort(%v) = %s %s, want %s %s", tc.a, h, p, tc.h, tc.p)
		}
	}
}
