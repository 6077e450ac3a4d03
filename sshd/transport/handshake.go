package transport

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// ConnOptions are the settings of one connection that differ from the
// Server's. The zero value uses the Server's.
type ConnOptions struct {
	// Signer makes this connection's host-key signatures; nil means the
	// Server's in-process keys (Config.HostKeys).
	Signer HostKeySigner
}

// Handshake runs the version exchange and the first key exchange on nc
// and returns the connection ready for user authentication. On failure the
// peer has been sent the matching SSH_MSG_DISCONNECT and nc is closed.
// Bound its duration with a deadline on nc.
func (s *Server) Handshake(nc net.Conn) (*Conn, error) {
	return s.HandshakeWith(nc, nil)
}

// HandshakeWith is Handshake with per-connection options (nil for none).
func (s *Server) HandshakeWith(nc net.Conn, o *ConnOptions) (*Conn, error) {
	c, err := newConn(s, nc, o)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if err := c.handshake(); err != nil {
		return nil, c.fail(err)
	}
	return c, nil
}

func (c *Conn) handshake() error {
	if _, err := c.nc.Write(c.srv.version); err != nil {
		return fmt.Errorf("transport: writing version: %w", err)
	}
	v, err := readVersion(c.rd.r)
	if err != nil {
		return err
	}
	c.qa.ack()
	c.magic.vC = v
	c.wmu.Lock()
	err = c.sendKexInitLocked()
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	p, err := c.readFirstKexInit()
	if err != nil {
		return err
	}
	return c.kex(p)
}

// readFirstKexInit skips IGNORE and DEBUG before the client's KEXINIT;
// strict kex later rejects the exchange if any came first.
func (c *Conn) readFirstKexInit() ([]byte, error) {
	for {
		p, err := c.read()
		if err != nil {
			return nil, err
		}
		switch p[0] {
		case wire.MsgKexInit:
			return p, nil
		case wire.MsgIgnore, wire.MsgDebug:
			continue
		case wire.MsgDisconnect:
			return nil, peerDisconnect(p)
		}
		return nil, protocolError("expected KEXINIT, got message %d", p[0])
	}
}

// sendKexInitLocked sends our KEXINIT and makes ordinary writes queue
// until the exchange completes. c.wmu must be held.
func (c *Conn) sendKexInitLocked() error {
	if c.kexPending {
		return nil
	}
	m := &kexInitMsg{
		kex:       slices.Clone(c.srv.offer.kex),
		hostKey:   c.srv.offer.hostKeys,
		ciphersCS: c.srv.offer.ciphers, ciphersSC: c.srv.offer.ciphers,
		macsCS: c.srv.offer.macs, macsSC: c.srv.offer.macs,
		compCS: []string{compressionNone}, compSC: []string{compressionNone},
	}
	if c.kexCount == 0 {
		m.kex = append(m.kex, strictKexServer)
	}
	rand.Read(m.cookie[:])
	p := m.marshal()
	if err := c.writeLocked(p); err != nil {
		return err
	}
	c.ourInit = p
	c.kexPending = true
	c.armKexTimerLocked()
	return nil
}

// kex runs one key exchange after the client's KEXINIT p.
func (c *Conn) kex(p []byte) error {
	m := handshakeMagics{vC: c.magic.vC, vS: c.magic.vS, iC: bytes.Clone(p)}
	ci, err := parseKexInit(m.iC)
	if err != nil {
		return err
	}
	if m.iS, err = c.ensureKexInit(); err != nil {
		return err
	}
	si, err := parseKexInit(m.iS)
	if err != nil {
		return err
	}
	a, err := negotiate(ci, si)
	if err != nil {
		return err
	}
	if err := c.noteFirstKex(ci); err != nil {
		return err
	}
	start := time.Now()
	res, err := c.exchange(a, &m)
	if err != nil {
		return err
	}
	if err := c.newKeys(a, res); err != nil {
		return err
	}
	c.srv.log.Debug("transport: key exchange done", "remote", c.nc.RemoteAddr().String(), "n", c.kexCount,
		"kex", a.kex.name, "host_key", a.hostKey, "cipher_in", a.cipherCS.name, "cipher_out", a.cipherSC.name,
		"strict", c.strict, "elapsed", time.Since(start))
	return nil
}

// ensureKexInit returns our KEXINIT for this exchange, sending it now when
// the client started the exchange.
func (c *Conn) ensureKexInit() ([]byte, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.sendKexInitLocked(); err != nil {
		return nil, err
	}
	return c.ourInit, nil
}

// noteFirstKex records strict kex and ext-info from the first exchange.
func (c *Conn) noteFirstKex(ci *kexInitMsg) error {
	if c.kexCount > 0 {
		return nil
	}
	c.strict = slices.Contains(ci.kex, strictKexClient)
	c.extInfo = slices.Contains(ci.kex, extInfoClient)
	if c.strict && c.rd.seq != 1 {
		return protocolError("strict kex: KEXINIT was not the first packet")
	}
	return nil
}

// exchange reads the client's kex message and answers it.
func (c *Conn) exchange(a *algorithms, m *handshakeMagics) (*kexResult, error) {
	if a.guessWrong {
		if _, err := c.readKexPacket(0); err != nil {
			return nil, err
		}
	}
	p, err := c.readKexPacket(wire.MsgKexECDHInit)
	if err != nil {
		return nil, err
	}
	res, reply, err := serverKex(c.srv, c.signer, a, m, p)
	if err != nil {
		return nil, err
	}
	if err := c.writeKex(reply); err != nil {
		return nil, err
	}
	return res, nil
}

// readKexPacket reads the next key exchange message, which must be want
// (0: any kex-method message, for a wrong guess). IGNORE and DEBUG are
// skipped except during a strict initial exchange.
func (c *Conn) readKexPacket(want byte) ([]byte, error) {
	for {
		p, err := c.read()
		if err != nil {
			return nil, err
		}
		t := p[0]
		switch {
		case t == want || (want == 0 && t >= 30 && t < 50):
			return p, nil
		case t == wire.MsgDisconnect:
			return nil, peerDisconnect(p)
		case c.strict && c.kexCount == 0:
			return nil, protocolError("strict kex: unexpected message %d during key exchange", t)
		case t == wire.MsgIgnore || t == wire.MsgDebug || t == wire.MsgUnimplemented:
			continue
		}
		return nil, protocolError("unexpected message %d during key exchange", t)
	}
}

func (c *Conn) writeKex(p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(p)
}

// newKeys derives the keys, sends NEWKEYS, waits for the client's NEWKEYS,
// switches both directions and, after the first exchange, sends EXT_INFO.
func (c *Conn) newKeys(a *algorithms, res *kexResult) error {
	if c.sessionID == nil {
		c.sessionID = res.H
	}
	cs := keysFor(res.h, res.K, res.H, c.sessionID, a.cipherCS, a.macCS, true)
	sc := keysFor(res.h, res.K, res.H, c.sessionID, a.cipherSC, a.macSC, false)
	rc, err := newPacketCipher(c.srv.reg, a.cipherCS, a.macCS, cs)
	if err != nil {
		return kexError(err, "client-to-server cipher")
	}
	wc, err := newPacketCipher(c.srv.reg, a.cipherSC, a.macSC, sc)
	if err != nil {
		rc.Close()
		return kexError(err, "server-to-client cipher")
	}
	if err := c.switchWrite(wc, keyed{a.cipherSC, a.macSC, sc}); err != nil {
		rc.Close()
		return err
	}
	if _, err := c.readKexPacket(wire.MsgNewKeys); err != nil {
		rc.Close()
		return err
	}
	c.switchRead(rc, keyed{a.cipherCS, a.macCS, cs})
	if err := c.sendExtInfo(); err != nil {
		return err
	}
	c.finishKex()
	return nil
}

// sendExtInfo sends EXT_INFO after the first exchange, once the client's
// NEWKEYS is in: answering it at once gives the kernel a segment to carry
// the ACK of that NEWKEYS, which the client (Nagle on, as OpenSSH's is
// for non-interactive sessions) is waiting for before it sends its next
// request. Sent earlier, the server has nothing to say and the client
// waits out the 40 ms delayed ACK. Queued packets follow it.
func (c *Conn) sendExtInfo() error {
	if c.kexCount != 0 || !c.extInfo {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(extInfoMsg(c.srv.sigAlgs))
}

// switchWrite sends NEWKEYS under the old keys and installs wc.
func (c *Conn) switchWrite(wc packetCipher, k keyed) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.writeLocked([]byte{wire.MsgNewKeys}); err != nil {
		wc.Close()
		return err
	}
	old := c.wr.c
	c.wr.c = wc
	old.Close()
	if c.strict {
		c.wr.seq = 0
	}
	c.wr.bytes, c.wr.packets = 0, 0
	c.wr.keyed = k
	c.wLimit = c.srv.rekeyLimit(k.cipher)
	return nil
}

func (c *Conn) switchRead(rc packetCipher, k keyed) {
	old := c.rd.c
	c.rd.c = rc
	old.Close()
	if c.strict {
		c.rd.seq = 0
	}
	c.rd.bytes, c.rd.packets = 0, 0
	c.rd.keyed = k
	c.rLimit = c.srv.rekeyLimit(k.cipher)
}

// finishKex releases the queued packets and arms the time limit.
func (c *Conn) finishKex() {
	c.rekeyDue.Store(false)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.kexCount++ // written under wmu: sendKexInitLocked reads it
	c.kexPending = false
	if c.kexTimer != nil {
		c.kexTimer.Stop()
	}
	c.ourInit = nil
	q := c.queue
	c.queue, c.queueBytes = nil, 0
	for _, p := range q {
		if c.writeLocked(p) != nil {
			break
		}
	}
	c.armTimerLocked()
	c.wcond.Broadcast()
}

func (c *Conn) armTimerLocked() {
	if c.srv.rekeyT < 0 || c.werr != nil {
		return
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(c.srv.rekeyT, func() { c.rekeyDue.Store(true) })
		return
	}
	c.timer.Reset(c.srv.rekeyT)
}
