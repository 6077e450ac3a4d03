package penalty

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"

	"github.com/offload/offload/sshd/sshlog"
)

// AdmitConn is Admit for an accepted connection, as a listener applies
// it: a refused client is sent RefusalText and the drop line is logged,
// pending being the connections not yet authenticated. A nil Tracker
// admits every connection (with a nil Slot, whose Release does nothing).
func (t *Tracker) AdmitConn(nc net.Conn, pending int, log *slog.Logger) (*Slot, bool) {
	if t == nil {
		return nil, true
	}
	remote, local := addrPort(nc.RemoteAddr()), addrPort(nc.LocalAddr())
	slot, err := t.Admit(remote.Addr())
	var r *Refused
	if errors.As(err, &r) {
		log.Info(DropLine(pending, remote, local, r.Reason), sshlog.Worded())
		nc.Write([]byte(RefusalText))
		return nil, false
	}
	return slot, true
}

// PenalizeOutcome penalises remote's source for a connection that ended
// as o, when Classify names a penalty for it. A nil Tracker does nothing.
func (t *Tracker) PenalizeOutcome(remote net.Addr, o Outcome) {
	if t == nil {
		return
	}
	if k, ok := Classify(o); ok {
		t.Penalize(addrPort(remote).Addr(), k)
	}
}

// addrPort is a's address and port, an IPv4-mapped address unmapped.
func addrPort(a net.Addr) netip.AddrPort {
	if a == nil {
		return netip.AddrPort{}
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
