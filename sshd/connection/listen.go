package connection

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/offload/offload/sshd/match"
	"github.com/offload/offload/sshd/wire"
)

// forwards are the listeners a connection opened for its peer
// (tcpip-forward and streamlocal-forward@openssh.com). They are opened by
// the process running the connection layer, so they belong to the user.
type forwards struct {
	mu     sync.Mutex
	byKey  map[string]*forward
	closed bool
}

// forward is one remote forwarding: its listening sockets and what the
// forwarded-* channel opens name.
type forward struct {
	key  string
	host string // as the client asked, for forwarded-tcpip
	port uint32 // the port listened on (allocated when 0 was asked)
	path string // streamlocal
	ls   []net.Listener
}

func tcpKey(host string, port uint32) string {
	return "tcp " + host + " " + strconv.FormatUint(uint64(port), 10)
}
func unixKey(path string) string { return "unix " + path }

// add registers f unless the key is taken or there are too many.
func (fw *forwards) add(f *forward, limit int) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	switch {
	case fw.closed:
		return ErrClosed
	case fw.byKey[f.key] != nil:
		return errors.New("already forwarded")
	case len(fw.byKey) >= limit:
		return fmt.Errorf("more than %d forwarding listeners", limit)
	}
	if fw.byKey == nil {
		fw.byKey = map[string]*forward{}
	}
	fw.byKey[f.key] = f
	return nil
}

// full reports whether another listener would pass the limit.
func (fw *forwards) full(limit int) bool {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return len(fw.byKey) >= limit
}

// cancel closes and forgets the forward under key.
func (fw *forwards) cancel(key string) bool {
	fw.mu.Lock()
	f := fw.byKey[key]
	delete(fw.byKey, key)
	fw.mu.Unlock()
	if f != nil {
		f.close()
	}
	return f != nil
}

func (fw *forwards) closeAll() {
	fw.mu.Lock()
	fs := fw.byKey
	fw.byKey, fw.closed = nil, true
	fw.mu.Unlock()
	for _, f := range fs {
		f.close()
	}
}

func (f *forward) close() {
	for _, l := range f.ls {
		l.Close()
	}
}

// tcpipForward answers tcpip-forward: listen, and open a
// forwarded-tcpip channel for each connection accepted. The reply to a
// request for port 0 carries the allocated port.
func (m *mux) tcpipForward(payload []byte, wantReply bool) (bool, []byte) {
	r := wire.NewReader(payload)
	host, port := r.String("address to bind"), r.Uint32("port to bind")
	if err := r.Done(); err != nil || port > 65535 || len(host) > 255 {
		m.log.Info("connection: malformed tcpip-forward request", "err", err)
		return false, nil
	}
	if why := m.listenRefusal(m.cfg.AllowTCPForwarding, "AllowTcpForwarding"); why != "" {
		return m.refuseForward(host, port, why)
	}
	if port == 0 && !wantReply {
		return m.refuseForward(host, port, "port 0 without a reply to carry the allocated port")
	}
	if !permitListen(m.cfg.PermitListen, host, port) || !permitListen(m.perm.PermitListen, host, port) {
		return m.refuseForward(host, port, "not permitted (PermitListen/permitlisten)")
	}
	if why := m.privilegedPort(port); why != "" {
		return m.refuseForward(host, port, why)
	}
	if m.fwd.full(m.cfg.MaxListeners) {
		return m.refuseForward(host, port, fmt.Sprintf("more than %d forwarding listeners", m.cfg.MaxListeners))
	}
	f, err := m.listenTCP(host, port)
	if err == nil {
		if err = m.fwd.add(f, m.cfg.MaxListeners); err != nil {
			f.close()
		}
	}
	if err != nil {
		return m.refuseForward(host, port, err.Error())
	}
	for _, l := range f.ls {
		m.goSafe("tcpip-forward", nil, func() { m.acceptForwarded(f, l) })
	}
	m.log.Info("connection: remote forwarding", "address", trunc(host), "port", f.port)
	if port == 0 {
		return true, wire.AppendUint32(nil, f.port)
	}
	return true, nil
}

func (m *mux) refuseForward(host string, port uint32, why string) (bool, []byte) {
	m.log.Info("connection: remote forwarding refused", "remote", m.remoteString(), "address", trunc(host), "port", port, "reason", why)
	return false, nil
}

// listenRefusal says why remote forwarding of a kind is not allowed.
func (m *mux) listenRefusal(allow TCPForwarding, keyword string) string {
	switch {
	case m.cfg.DisableForwarding:
		return "DisableForwarding"
	case !allow.remoteAllowed():
		return keyword + " forbids remote forwarding"
	case m.perm.NoPortForwarding:
		return "no-port-forwarding set for this login"
	}
	return ""
}

// unprivilegedPortStart is where a non-root user may bind, as the kernel
// says (net.ipv4.ip_unprivileged_port_start, 1024 by default).
func unprivilegedPortStart() uint32 {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return 1024
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return 1024
	}
	return uint32(n)
}

// privilegedPort refuses ports below the unprivileged start to users
// other than root, as OpenSSH's user process would be refused by the
// kernel; checked here too because a root server in the in-process mode
// could bind them.
func (m *mux) privilegedPort(port uint32) string {
	a, err := m.account()
	if err != nil {
		return "unknown account"
	}
	if port != 0 && a.uid != 0 && port < unprivilegedPortStart() {
		return fmt.Sprintf("port %d is privileged and %s is not root", port, a.name)
	}
	return ""
}

// permitListen checks a tcpip-forward against a PermitListen list
// (sshd_config's or authorized_keys permitlisten=): nil or "any" allows
// all, "none" nothing; entries are "[host:]port" with the host a pattern
// (lower-cased request matched) and port "*" for any, as OpenSSH's
// remote_open_match.
func permitListen(list []string, host string, port uint32) bool {
	if list == nil {
		return true
	}
	host = strings.ToLower(host)
	for _, e := range list {
		switch e {
		case "any":
			return true
		case "none":
			continue
		}
		h, p := "*", e
		if i := strings.LastIndexByte(e, ':'); i >= 0 {
			h, p = strings.Trim(e[:i], "[]"), e[i+1:]
		}
		if (p == "*" || p == strconv.FormatUint(uint64(port), 10)) && match.Glob(host, strings.ToLower(h)) {
			return true
		}
	}
	return false
}

// bindAddrs picks the addresses to listen on, as OpenSSH's
// channel_fwd_bind_addr for the server: GatewayPorts yes always means
// every address; clientspecified honours the client ("" and "*" are
// every address, "localhost" the loopback addresses); no means loopback,
// though an explicit 127.0.0.1 or ::1 is honoured.
func (m *mux) bindAddrs(host string) []string {
	wildcard := []string{""}
	loopback := []string{"127.0.0.1", "::1"}
	switch m.cfg.GatewayPorts {
	case GatewayYes:
		return wildcard
	case GatewayClientSpecified:
		switch host {
		case "", "*":
			return wildcard
		case "localhost":
			return loopback
		}
		return []string{host}
	}
	if host == "127.0.0.1" || host == "::1" {
		return []string{host}
	}
	return loopback
}

// listenTCP opens the listeners of a tcpip-forward: on every address
// bindAddrs picks (an address family the host lacks is skipped), all on
// the same port when 0 asked for one to be allocated.
func (m *mux) listenTCP(host string, port uint32) (*forward, error) {
	f := &forward{host: host, port: port}
	var firstErr error
	for _, a := range m.bindAddrs(host) {
		l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.FormatUint(uint64(f.port), 10)))
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if f.port == 0 {
			f.port = uint32(l.Addr().(*net.TCPAddr).Port)
		}
		f.ls = append(f.ls, l)
	}
	if len(f.ls) == 0 {
		return nil, firstErr
	}
	f.key = tcpKey(host, f.port)
	return f, nil
}

// cancelTCPIPForward answers cancel-tcpip-forward: the address as
// requested, and the port listened on.
func (m *mux) cancelTCPIPForward(payload []byte) bool {
	r := wire.NewReader(payload)
	host, port := r.String("address to bind"), r.Uint32("port to bind")
	if r.Done() != nil {
		return false
	}
	return m.fwd.cancel(tcpKey(host, port))
}

// acceptForwarded opens a forwarded-* channel for every connection a
// listener accepts, until it is closed.
func (m *mux) acceptForwarded(f *forward, l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		m.goSafe("forwarded connection", nil, func() { m.forwardConn(f, conn) })
	}
}

// forwardConn opens the channel for one accepted connection and splices.
func (m *mux) forwardConn(f *forward, conn net.Conn) {
	defer conn.Close()
	kind, extra := "forwarded-tcpip", []byte(nil)
	if f.path != "" {
		kind = "forwarded-streamlocal@openssh.com"
		extra = wire.AppendString(wire.AppendString(nil, f.path), "")
	} else {
		oh, op := hostPort(conn.RemoteAddr())
		opn, _ := strconv.ParseUint(op, 10, 32)
		extra = wire.AppendUint32(wire.AppendString(nil, f.host), f.port)
		extra = wire.AppendUint32(wire.AppendString(extra, oh), uint32(opn))
	}
	c, err := m.openChannel(kind, extra)
	if err != nil {
		m.log.Info("connection: forwarded connection not opened", "type", kind, "err", err)
		return
	}
	splice(c, conn)
	c.Close()
}

// streamLocalForward answers streamlocal-forward@openssh.com: listen on
// a Unix socket (ssh -R with a socket path on the server side).
func (m *mux) streamLocalForward(payload []byte) bool {
	r := wire.NewReader(payload)
	path := r.String("socket path")
	if err := r.Done(); err != nil || path == "" || len(path) > maxSocketPath || strings.IndexByte(path, 0) >= 0 {
		m.log.Info("connection: malformed streamlocal-forward request")
		return false
	}
	why := m.listenRefusal(m.cfg.AllowStreamLocalForwarding, "AllowStreamLocalForwarding")
	if why == "" {
		why = m.socketRefusal()
	}
	if why == "" && m.fwd.full(m.cfg.MaxListeners) {
		why = fmt.Sprintf("more than %d forwarding listeners", m.cfg.MaxListeners)
	}
	if why != "" {
		m.log.Info("connection: streamlocal forwarding refused", "path", trunc(path), "reason", why)
		return false
	}
	l, err := m.listenUnix(path)
	if err != nil {
		m.log.Info("connection: streamlocal forwarding failed", "path", trunc(path), "err", err)
		return false
	}
	f := &forward{key: unixKey(path), path: path, ls: []net.Listener{l}}
	if err := m.fwd.add(f, m.cfg.MaxListeners); err != nil {
		f.close()
		return false
	}
	m.goSafe("streamlocal-forward", nil, func() { m.acceptForwarded(f, l) })
	return true
}

// listenUnix creates the socket with StreamLocalBindMask applied, after
// removing an existing socket (never another kind of file) when
// StreamLocalBindUnlink is set. The listener removes it when closed.
func (m *mux) listenUnix(path string) (net.Listener, error) {
	if m.cfg.StreamLocalBindUnlink {
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			if err := os.Remove(path); err != nil {
				return nil, err
			}
		}
	}
	umaskMu.Lock()
	old := syscall.Umask(int(m.cfg.bindMask))
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	umaskMu.Unlock()
	return l, err
}

func (m *mux) cancelStreamLocalForward(payload []byte) bool {
	r := wire.NewReader(payload)
	path := r.String("socket path")
	if r.Done() != nil {
		return false
	}
	return m.fwd.cancel(unixKey(path))
}
