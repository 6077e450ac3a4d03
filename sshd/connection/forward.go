package connection

import (
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/offload/offload/sshd/wire"
)

const dialTimeout = 10 * time.Second

// forwardingRefusal says why direct-tcpip is not allowed, or "".
func (m *mux) forwardingRefusal() string {
	switch {
	case !m.cfg.AllowTCPForwarding.localAllowed():
		return "AllowTcpForwarding forbids local forwarding"
	case m.perm.NoPortForwarding:
		return "no-port-forwarding set for this login"
	}
	return ""
}

// directTCPIP is the type-specific part of a direct-tcpip open.
type directTCPIP struct {
	host       string
	port       uint32
	originHost string
	originPort uint32
}

func parseDirectTCPIP(b []byte) (directTCPIP, error) {
	r := wire.NewReader(b)
	d := directTCPIP{host: r.String("host to connect"), port: r.Uint32("port to connect"),
		originHost: r.String("originator address"), originPort: r.Uint32("originator port")}
	return d, r.Done()
}

// permitOpen checks the target against perm.PermitOpen ("host:port",
// port may be "*"; "any" or "*:*" allows everything).
func permitOpen(list []string, host string, port uint32) bool {
	if list == nil {
		return true
	}
	for _, e := range list {
		if e == "any" {
			return true
		}
		h, p, err := net.SplitHostPort(e)
		if err != nil {
			continue
		}
		if (h == "*" || strings.EqualFold(h, host)) && (p == "*" || p == strconv.FormatUint(uint64(port), 10)) {
			return true
		}
	}
	return false
}

// serveDirectTCPIP connects to the requested target and splices it to
// the channel.
func (m *mux) serveDirectTCPIP(c *channel, extra []byte) {
	d, err := parseDirectTCPIP(extra)
	if err != nil || d.port > 65535 || d.host == "" {
		c.openFail(openConnectFailed, "malformed direct-tcpip request")
		return
	}
	if !permitOpen(m.perm.PermitOpen, d.host, d.port) {
		c.openFail(openAdminProhibited, "target not in permitopen")
		return
	}
	addr := net.JoinHostPort(d.host, strconv.FormatUint(uint64(d.port), 10))
	dialer := net.Dialer{Timeout: dialTimeout}
	conn, err := dialer.DialContext(c.ctx, "tcp", addr)
	if err != nil {
		m.log.Info("connection: direct-tcpip connect failed", "target", trunc(addr), "err", err)
		c.openFail(openConnectFailed, "connect failed")
		return
	}
	defer conn.Close()
	if c.confirm() != nil {
		return
	}
	m.log.Debug("connection: direct-tcpip", "target", trunc(addr), "origin", trunc(d.originHost))
	splice(c, conn)
}

// splice copies both ways until both directions ended or the channel
// died, propagating half-closes.
func splice(c *channel, conn net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		c.stdout.ReadFrom(conn)
		c.CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		buf := make([]byte, stdinBufSize)
		io.CopyBuffer(writerOnly{conn}, readerOnly{c}, buf)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	for n := 0; n < 2; n++ {
		select {
		case <-done:
		case <-c.ctx.Done():
			conn.Close()
			<-done
		}
	}
}
