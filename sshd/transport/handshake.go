package transport

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"slices"

	"github.com/offload/offload/sshd/wire"
)

// ConnOptions are the settings of one connection that differ from the
// Server's. The zero value uses the Server's.
type ConnOptions struct {
	// Signer makes this connection's host-key signatures; nil means the
	// Server's in-process keys (Config.HostKeys).
	Signer HostKeySigner
	// Logger receives the connection's lines (its key exchanges and the
	// providers that serve them), usually the Server's logger with the
	// connection's id and remote address; nil means the Server's, with
	// the remote address.
	Logger *slog.Logger
	// ID is the connection's id in the logs (the Logger's "conn"). An
	// AEAD served in another process (through the monitor) is told it
	// with the packets the AEAD protects, so that that process's lines
	// (a token fallback) name the connection and the packet too.
	ID uint64
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
	if c.srv.selection == SelectionMeasured && sendsKexInitFirst(v) {
		c.waitForClientKexInit() // our KEXINIT follows the client's
	} else {
		c.wmu.Lock()
		err = c.sendKexInitLocked()
		c.wmu.Unlock()
		if err != nil {
			return err
		}
	}
	for c.kexCount == 0 {
		p, err := c.read()
		if err != nil {
			return err
		}
		if _, err := c.dispatch(p); err != nil {
			return err
		}
	}
	return nil
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
		ciphersCS: c.cipherOfferLocked(0), ciphersSC: c.cipherOfferLocked(1),
		macsCS: c.srv.offer.macs, macsSC: c.srv.offer.macs,
		compCS: c.srv.comp, compSC: c.srv.comp,
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

// ensureKexInit returns our KEXINIT for this exchange, sending it now when
// the client started the exchange; ci is the client's, whose cipher
// lists a measured offer is chosen from.
func (c *Conn) ensureKexInit(ci *kexInitMsg) ([]byte, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.clientCiphers = [2][]string{ci.ciphersCS, ci.ciphersSC}
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

func (c *Conn) writeKex(p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(p)
}

// sendNewKeys derives the keys of the finished exchange, sends NEWKEYS
// and, after the first exchange, EXT_INFO under the new keys (RFC 8308
// §2.4: the next packet after our first NEWKEYS). The read cipher waits
// in k for the client's NEWKEYS.
func (c *Conn) sendNewKeys(k *kexRun) error {
	a, res := k.a, k.res
	if c.sessionID == nil {
		c.sessionID = res.H
		if hk := hostKeyFor(c.srv.hostKeys, a.hostKey); hk != nil {
			c.initialHostKey = hk.pub
		}
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
	if err := c.switchWrite(wc, keyed{a.cipherSC, a.macSC, sc, a.compSC}); err != nil {
		rc.Close()
		return err
	}
	k.rc, k.rcKeys = rc, keyed{a.cipherCS, a.macCS, cs, a.compCS}
	return nil
}

// switchWrite sends NEWKEYS under the old keys, installs wc and, after
// the first exchange, sends EXT_INFO. Sent this early, EXT_INFO reaches
// a client before it picks the signature algorithm of its user key. The
// client's NEWKEYS then gets no immediate answer, so its ACK comes from
// the quick-ACK request after each early read (quickack.go) rather than
// from a reply.
func (c *Conn) switchWrite(wc packetCipher, k keyed) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.writeLocked([]byte{wire.MsgNewKeys}); err != nil {
		wc.Close()
		return err
	}
	if err := c.wr.install(wc, c.srv.pipeDepth, c.pipeFailed); err != nil {
		c.werr = err
		c.wcond.Broadcast()
		return err
	}
	c.piped.Store(c.wr.pipe != nil)
	if c.strict {
		c.wr.seq = 0
	}
	c.keysFromOut = c.wr.seq
	c.watchFallback(wc, "out", c.keysFromOut)
	c.wr.bytes, c.wr.packets = 0, 0
	c.wr.keyed = k
	c.wr.setCompression(k.comp, c.zStarted.Load())
	c.wLimit = c.srv.rekeyLimit(k.cipher)
	if c.kexCount == 0 && c.extInfo {
		return c.writeLocked(c.srv.extInfoMsg())
	}
	return nil
}

func (c *Conn) switchRead(rc packetCipher, k keyed) {
	c.rd.install(rc, c.srv.pipeDepth) // packets read ahead are read again under rc
	if c.strict {
		c.rd.seq = 0
	}
	c.keysFromIn = c.rd.seq
	c.watchFallback(rc, "in", c.keysFromIn)
	c.rd.bytes, c.rd.packets = 0, 0
	c.rd.keyed = k
	c.rd.setCompression(k.comp, c.zStarted.Load())
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
