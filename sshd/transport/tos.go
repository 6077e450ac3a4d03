package transport

import (
	"errors"
	"net"
	"syscall"
)

// errNoTOS is SetTOS's error on a connection that is not an IP socket.
var errNoTOS = errors.New("transport: not an IP socket: no type of service")

// SetTOS sets the type-of-service byte of the packets the connection
// sends: IP_TOS, or IPV6_TCLASS on an IPv6 socket talking IPv6 (an IPv4
// peer of a dual-stack socket is IPv4 traffic, as OpenSSH treats it).
func (c *Conn) SetTOS(tos int) error {
	sc, ok := c.nc.(syscall.Conn)
	la, isTCP := c.nc.LocalAddr().(*net.TCPAddr)
	if !ok || !isTCP {
		return errNoTOS
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	level, opt := syscall.IPPROTO_IP, syscall.IP_TOS
	if la.IP.To4() == nil {
		level, opt = syscall.IPPROTO_IPV6, syscall.IPV6_TCLASS
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), level, opt, tos) }); err != nil {
		return err
	}
	return serr
}
