package penalty

import (
	"bytes"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// addrConn is a net.Conn with the addresses of a TCP connection and
// what is written to it recorded.
type addrConn struct {
	net.Conn
	remote, local net.Addr
	wrote         bytes.Buffer
}

func (c *addrConn) RemoteAddr() net.Addr        { return c.remote }
func (c *addrConn) LocalAddr() net.Addr         { return c.local }
func (c *addrConn) Write(b []byte) (int, error) { return c.wrote.Write(b) }

func tcpConn(remote string) *addrConn {
	return &addrConn{remote: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(remote)),
		local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 22}}
}

// TestAdmitConn: a penalised source (an IPv4-mapped address counts as
// the IPv4 one) is sent OpenSSH's refusal and logged with the drop line;
// another source is admitted; a nil Tracker admits everything.
func TestAdmitConn(t *testing.T) {
	tr, _ := newTracker(t, nil)
	tr.PenalizeOutcome(tcpConn("[::ffff:127.0.0.2]:4000").RemoteAddr(), Outcome{Crashed: true})
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	c := tcpConn("127.0.0.2:5000")
	if _, ok := tr.AdmitConn(c, 3, log); ok {
		t.Fatal("a penalised source was admitted")
	}
	if c.wrote.String() != RefusalText {
		t.Errorf("refused client was sent %q, want %q", c.wrote.String(), RefusalText)
	}
	if want := "drop connection #3 from [127.0.0.2]:5000 on [127.0.0.1]:22 penalty: "; !strings.Contains(logs.String(), want) {
		t.Errorf("log %q lacks %q", logs.String(), want)
	}
	slot, ok := tr.AdmitConn(tcpConn("127.0.0.3:5000"), 0, log)
	if !ok {
		t.Fatal("an unpenalised source was refused")
	}
	slot.Release()
	var none *Tracker
	if slot, ok := none.AdmitConn(c, 0, log); !ok || slot != nil {
		t.Errorf("nil Tracker: slot %v, admitted %v; want nil, true", slot, ok)
	}
	none.PenalizeOutcome(c.RemoteAddr(), Outcome{Crashed: true}) // does nothing, no panic
}

// TestPenalizeOutcomeAuthenticated: an authenticated connection is never
// penalised, whatever else its outcome says.
func TestPenalizeOutcomeAuthenticated(t *testing.T) {
	tr, _ := newTracker(t, nil)
	c := tcpConn("127.0.0.2:5000")
	tr.PenalizeOutcome(c.RemoteAddr(), Outcome{Authenticated: true, Crashed: true})
	if _, ok := tr.AdmitConn(c, 0, slog.New(slog.DiscardHandler)); !ok {
		t.Fatal("an authenticated connection's source was penalised")
	}
}
