package auth

import (
	"net"
	"net/netip"
)

// remoteAddr extracts the client's IP address (unmapped) and port; both
// are zero for addresses that are not IP.
func remoteAddr(a net.Addr) (netip.Addr, uint16) {
	switch a := a.(type) {
	case *net.TCPAddr:
		ap := a.AddrPort()
		return ap.Addr().Unmap(), ap.Port()
	case nil:
		return netip.Addr{}, 0
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, 0
	}
	return ap.Addr().Unmap(), ap.Port()
}
