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

// forwardingRefusal says why local forwarding of a kind (direct-tcpip
// under AllowTcpForwarding, direct-streamlocal under
// AllowStreamLocalForwarding) is not allowed, or "".
func (m *mux) forwardingRefusal(allow TCPForwarding, keyword string) string {
	switch {
	case m.cfg.DisableForwarding:
		return "DisableForwarding"
	case !allow.localAllowed():
		return keyword + " forbids local forwarding"
	case m.perm.NoPortForwarding:
		return "no-port-forwarding set for this login"
	}
	return ""
}

// remoteString is the client's address for logs.
func (m *mux) remoteString() string {
	if m.addrs.Remote == nil {
		return "UNKNOWN"
	}
	return m.addrs.Remote.String()
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

// permitOpen checks a direct-tcpip target against a PermitOpen list
// (sshd_config's or authorized_keys permitopen=): nil allows all, "any"
// allows all, "none" nothing, "host:port" entries match exactly with "*"
// for any host or port, as OpenSSH's open_match.
func permitOpen(list []string, host string, port uint32) bool {
	if list == nil {
		return true
	}
	for _, e := range list {
		switch e {
		case "any":
			return true
		case "none":
			continue
		}
		h, p, err := net.SplitHostPort(e)
		if err != nil {
			continue
		}
		if (h == "*" || h == host) && (p == "*" || p == strconv.FormatUint(uint64(port), 10)) {
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
	if !permitOpen(m.cfg.PermitOpen, d.host, d.port) || !permitOpen(m.perm.PermitOpen, d.host, d.port) {
		m.log.Info("connection: direct-tcpip refused by PermitOpen", "target", trunc(d.host), "port", d.port)
		c.openFail(openAdminProhibited, "target not permitted (PermitOpen/permitopen)")
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

// Bounds on Unix socket paths (sun_path is 108 bytes on Linux).
const maxSocketPath = 107

func parseDirectStreamLocal(b []byte) (string, error) {
	r := wire.NewReader(b)
	path := r.String("socket path")
	r.String("reserved")
	r.Uint32("reserved")
	return path, r.Done()
}

// serveDirectStreamLocal connects to a Unix socket (ssh -L with a socket
// path on the server side) and splices it to the channel.
func (m *mux) serveDirectStreamLocal(c *channel, extra []byte) {
	path, err := parseDirectStreamLocal(extra)
	if err != nil || path == "" || len(path) > maxSocketPath || strings.IndexByte(path, 0) >= 0 {
		c.openFail(openConnectFailed, "malformed direct-streamlocal request")
		return
	}
	if why := m.streamLocalRefusal(path); why != "" {
		// OpenSSH answers every refusal of a stream-local open alike.
		m.log.Info("connection: direct-streamlocal refused", "path", trunc(path), "reason", why)
		c.openFail(openConnectFailed, "open failed")
		return
	}
	if why := m.socketRefusal(); why != "" {
		c.openFail(openAdminProhibited, why)
		return
	}
	dialer := net.Dialer{Timeout: dialTimeout}
	conn, err := dialer.DialContext(c.ctx, "unix", path)
	if err != nil {
		m.log.Info("connection: direct-streamlocal connect failed", "path", trunc(path), "err", err)
		c.openFail(openConnectFailed, "connect failed")
		return
	}
	defer conn.Close()
	if c.confirm() != nil {
		return
	}
	splice(c, conn)
}

// streamLocalRefusal applies to a direct-streamlocal open the rules
// OpenSSH's sshd applies to it: AllowStreamLocalForwarding,
// DisableForwarding and no-port-forwarding as for TCP, and local TCP
// forwarding must be allowed too
// (AllowTcpForwarding no or remote refuses every local open), and the
// PermitOpen list and the key's permitopen= list, when they restrict,
// must each have an entry that matches the path: a "*" port with the
// host "*" or the path itself ("[/run/app.sock]:*"). A host:port entry
// for a TCP target never allows a socket.
func (m *mux) streamLocalRefusal(path string) string {
	if why := m.forwardingRefusal(m.cfg.AllowStreamLocalForwarding, "AllowStreamLocalForwarding"); why != "" {
		return why
	}
	switch {
	case !m.cfg.AllowTCPForwarding.localAllowed():
		return "AllowTcpForwarding forbids local forwarding"
	case !permitPath(m.cfg.PermitOpen, path) || !permitPath(m.perm.PermitOpen, path):
		return "path not permitted (PermitOpen/permitopen)"
	}
	return ""
}

// permitPath checks a Unix socket path against a PermitOpen list as
// OpenSSH's open_match does for a stream-local target: nil and "any"
// allow all, "none" nothing, and an entry only with a "*" port and a "*"
// host or the path as host.
func permitPath(list []string, path string) bool {
	if list == nil {
		return true
	}
	for _, e := range list {
		if e == "any" {
			return true
		}
		h, p, err := net.SplitHostPort(e)
		if err == nil && p == "*" && (h == "*" || h == path) {
			return true
		}
	}
	return false
}

// socketRefusal refuses Unix socket forwarding when the connection layer
// does not run as the user (a root server in the in-process mode): root
// would connect to, or create, sockets the user may not.
func (m *mux) socketRefusal() string {
	a, err := m.account()
	if err != nil {
		return "unknown account"
	}
	if a.needsSwitch() {
		return "Unix socket forwarding needs the connection layer to run as the user"
	}
	return ""
}

// splice copies both ways until both directions ended or the channel
// died, propagating half-closes.
func splice(c *channel, conn net.Conn) {
	done := make(chan struct{}, 2)
	c.m.goSafe("splice out", c, func() {
		defer func() { done <- struct{}{} }() // also after a panic
		c.stdout.ReadFrom(conn)
		c.CloseWrite()
	})
	c.m.goSafe("splice in", c, func() {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, stdinBufSize)
		io.CopyBuffer(writerOnly{conn}, readerOnly{c}, buf)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	})
	for n := 0; n < 2; n++ {
		select {
		case <-done:
		case <-c.ctx.Done():
			conn.Close()
			<-done
		}
	}
}
