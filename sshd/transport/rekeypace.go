package transport

import (
	"time"

	"github.com/offload/offload/sshd/wire"
)

// When key re-exchanges happen (doc.go, "Re-exchange"):
//
//   - The server starts one when a direction reaches its byte limit,
//     2^31 packets or the RekeyInterval; never during user
//     authentication: from the client's first SERVICE_REQUEST or
//     USERAUTH message until the server sends USERAUTH_SUCCESS (or
//     SetAuthenticated), a due re-exchange waits, as OpenSSH's sshd
//     holds it until authentication ends (an OpenSSH client aborts on a
//     KEXINIT during authentication). The packet limit is never held.
//   - A re-exchange the server starts is never delayed or refused.
//   - After authentication, a re-exchange the client starts spends one
//     unit of an allowance that holds at most ClientRekeyBurst units and
//     gains one per ClientRekeyBytes moved (both directions) and one per
//     ClientRekeyEvery: a client that re-keys every 64 KiB or every
//     second is never held back (OpenSSH's client with RekeyLimit 16
//     re-keys about once per 64 KiB of bulk data). Beyond that its KEXINIT is answered
//     only when a unit has accrued (at most ClientRekeyEvery later):
//     delayed, never refused. Before authentication the caller's limits
//     apply (the privilege-separation monitor's).
const (
	ClientRekeyBurst = 16
	ClientRekeyBytes = 64 << 10
	ClientRekeyEvery = time.Second
)

// paceParams are the allowance's parameters: the constants above, but
// tests of the transport shrink them.
type paceParams struct {
	burst float64
	bytes float64
	every time.Duration
}

var defaultPace = paceParams{burst: ClientRekeyBurst, bytes: ClientRekeyBytes, every: ClientRekeyEvery}

// rekeyAllowance is the client's re-exchange allowance, owned by the
// reader.
type rekeyAllowance struct {
	units float64
	last  time.Time
}

// accrue adds what moved bytes and the time since the last call earn.
func (a *rekeyAllowance) accrue(p paceParams, now time.Time, moved uint64) {
	if a.last.IsZero() {
		a.units, a.last = p.burst, now
	}
	if now.After(a.last) { // a clock that went back earns nothing
		a.units += float64(now.Sub(a.last)) / float64(p.every)
		a.last = now
	}
	a.units = min(p.burst, a.units+float64(moved)/p.bytes)
}

// take spends one unit and returns how long the re-exchange must wait
// for it (0: at once). A unit is never owed for longer than one
// interval: the exchange is answered when the unit has accrued.
func (a *rekeyAllowance) take(p paceParams) time.Duration {
	a.units--
	if a.units >= 0 {
		return 0
	}
	return time.Duration(-a.units * float64(p.every))
}

// noteAuthStart follows user authentication in the packets that pass: the
// client's SERVICE_REQUEST or USERAUTH message starts it (re-exchanges
// the server would start are held from then on), and USERAUTH_SUCCESS
// sent by the server ends it.
func (c *Conn) noteAuthStart(t byte) {
	if t == wire.MsgServiceRequest || t >= wire.MsgUserAuthRequest && t < wire.MsgGlobalRequest {
		c.authStarted.Store(true)
	}
}

// rekeyHeld: a re-exchange the server wants must wait for user
// authentication to end, unless the packet limit forces it.
func (c *Conn) rekeyHeld(packets uint64) bool {
	return c.authStarted.Load() && !c.authenticated.Load() && packets < maxPacketsPerKey
}

// serverWantsRekeyLocked: one of the server's own limits has been
// reached (c.wmu held).
func (c *Conn) serverWantsRekeyLocked() bool {
	return c.writeNeedsRekey() || c.rd.bytes >= c.rLimit || c.rd.packets >= maxPacketsPerKey
}

// paceClientRekey runs on the client's KEXINIT of a re-exchange: it
// accrues the allowance and, when the client started this exchange
// after authentication beyond its allowance, waits until a unit has
// accrued. A re-exchange the server started or wants anyway costs
// nothing.
func (c *Conn) paceClientRekey() {
	now := time.Now()
	c.wmu.Lock()
	moved := c.rd.bytes + c.wr.bytes
	byServer := c.kexPending || c.serverWantsRekeyLocked()
	c.wmu.Unlock()
	p := c.srv.pace
	c.pace.accrue(p, now, moved)
	if byServer || !c.authenticated.Load() {
		return
	}
	wait := c.pace.take(p)
	if wait <= 0 {
		return
	}
	c.srv.log.Debug("transport: delaying the client's key re-exchange", "remote", c.nc.RemoteAddr().String(),
		"delay", wait, "burst", p.burst, "per_bytes", p.bytes, "every", p.every)
	c.sleepUnlessClosed(wait)
}

// sleepUnlessClosed waits d, or less when the connection closes.
func (c *Conn) sleepUnlessClosed(d time.Duration) {
	const step = 50 * time.Millisecond
	for end := time.Now().Add(d); !c.closed.Load(); {
		left := time.Until(end)
		if left <= 0 {
			return
		}
		time.Sleep(min(left, step))
	}
}
