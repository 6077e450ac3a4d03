package connection

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/offload/offload/sshd/wire"
)

// x11BasePort is display 0's TCP port.
const x11BasePort = 6000

// Bounds on x11-req's strings.
const (
	maxX11Proto  = 64
	maxX11Cookie = 1024
)

// x11Display is a session's forwarded X11 display.
type x11Display struct {
	number      int
	display     string // DISPLAY
	authDisplay string // the display xauth is told about
	proto       string // e.g. MIT-MAGIC-COOKIE-1
	cookie      string // hex, as the client sent it (its fake cookie)
	single      bool
	once        sync.Once
	ls          []net.Listener
}

// x11Request is a parsed x11-req.
type x11Request struct {
	single        bool
	proto, cookie string
	screen        uint32
}

func parseX11Request(b []byte) (x11Request, error) {
	r := wire.NewReader(b)
	x := x11Request{single: r.Bool("single connection"), proto: r.String("auth protocol"),
		cookie: r.String("auth cookie"), screen: r.Uint32("screen number")}
	return x, r.Done()
}

// xauthValid accepts what OpenSSH's xauth_valid_string does: letters,
// digits and . : / - _ only, so nothing can be smuggled into xauth's
// command input.
func xauthValid(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == ':' || c == '/' || c == '-' || c == '_'
		if !ok {
			return false
		}
	}
	return true
}

// x11Req answers x11-req: listen on the first free display from
// X11DisplayOffset, and forward each X client to the SSH client as an
// "x11" channel. The cookie is installed with xauth before the program
// runs (rc.go).
func (s *session) x11Req(b []byte) error {
	x, err := parseX11Request(b)
	if err != nil {
		return refuse("x11-req", "malformed: %v", err)
	}
	if why := s.x11Refusal(x); why != "" {
		return refuse("x11-req", "%s", why)
	}
	d, err := s.m.listenX11(x)
	if err != nil {
		return refuse("x11-req", "%v", err)
	}
	s.x11 = d
	for _, l := range d.ls {
		s.m.goSafe("x11 listener", nil, func() { s.m.acceptX11(d, l) })
	}
	s.m.log.Debug("connection: X11 forwarding", "display", d.display)
	return nil
}

func (s *session) x11Refusal(x x11Request) string {
	m := s.m
	switch {
	case !m.cfg.X11Forwarding:
		return "X11Forwarding no"
	case m.perm.NoX11Forwarding:
		return "no-x11-forwarding set for this login"
	case s.x11 != nil:
		return "X11 forwarding already requested"
	case s.process() != nil:
		return "session already started"
	case len(x.proto) > maxX11Proto || len(x.cookie) > maxX11Cookie || !xauthValid(x.proto) || !xauthValid(x.cookie):
		return "invalid authentication data"
	}
	if _, err := os.Stat(m.cfg.XAuthLocation); err != nil || m.cfg.XAuthLocation == "none" {
		return "no xauth program (" + m.cfg.XAuthLocation + "); cannot forward X11"
	}
	return ""
}

// listenX11 binds the first display number whose port is free on every
// address: the loopback addresses, or all with X11UseLocalhost no.
func (m *mux) listenX11(x x11Request) (*x11Display, error) {
	hosts := []string{"127.0.0.1", "::1"}
	if m.cfg.X11NoLocalhost {
		hosts = []string{""}
	}
	for n := m.cfg.x11Offset; n < m.cfg.x11Offset+m.cfg.X11MaxDisplays; n++ {
		port := x11BasePort + n
		if port > 65535 {
			break
		}
		ls, err := listenAll(hosts, port)
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return m.newDisplay(n, x, ls), nil
	}
	return nil, fmt.Errorf("no free X11 display from %d to %d", m.cfg.x11Offset, m.cfg.x11Offset+m.cfg.X11MaxDisplays-1)
}

// listenAll listens on port on each host; an address family the machine
// lacks is skipped, a port in use on any of them fails them all.
func listenAll(hosts []string, port int) ([]net.Listener, error) {
	var ls []net.Listener
	for _, h := range hosts {
		l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) || len(hosts) == 1 || h == hosts[0] {
				for _, l := range ls {
					l.Close()
				}
				return nil, err
			}
			continue // no IPv6 here
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func (m *mux) newDisplay(n int, x x11Request, ls []net.Listener) *x11Display {
	d := &x11Display{number: n, proto: x.proto, cookie: x.cookie, single: x.single, ls: ls}
	suffix := fmt.Sprintf(":%d.%d", n, x.screen)
	if m.cfg.X11NoLocalhost {
		host, _ := os.Hostname()
		d.display, d.authDisplay = host+suffix, host+suffix
	} else {
		d.display, d.authDisplay = "localhost"+suffix, "unix"+suffix
	}
	return d
}

// acceptX11 opens an "x11" channel for each X client that connects;
// after the first with single-connection set, the display closes.
func (m *mux) acceptX11(d *x11Display, l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		if d.single {
			d.close()
		}
		m.goSafe("x11 connection", nil, func() {
			defer conn.Close()
			oh, op := hostPort(conn.RemoteAddr())
			opn, _ := strconv.ParseUint(op, 10, 32)
			c, err := m.openChannel("x11", wire.AppendUint32(wire.AppendString(nil, oh), uint32(opn)))
			if err != nil {
				m.log.Info("connection: x11 channel not opened", "err", err)
				return
			}
			splice(c, conn)
			c.Close()
		})
	}
}

// close stops listening for X clients.
func (d *x11Display) close() {
	d.once.Do(func() {
		for _, l := range d.ls {
			l.Close()
		}
	})
}

// closeX11 ends the session's display when the session ends.
func (s *session) closeX11() {
	if s.x11 != nil {
		s.x11.close()
	}
}
