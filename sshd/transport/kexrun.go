package transport

import (
	"bytes"
	"cmp"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// kexRun is one key exchange in progress. It is driven by the reader:
// every packet ReadPacket (or Handshake) reads goes through dispatch,
// which feeds the exchange's messages to the method's steps, so the
// peer's other messages keep flowing during a re-exchange.
type kexRun struct {
	m      handshakeMagics
	a      *algorithms
	step   int  // next step of a.kex.method; len(steps): waiting for NEWKEYS
	skip   bool // a wrong guess (RFC 4253 §7) is still to be dropped
	state  any  // what a multi-message method keeps between its steps
	res    *kexResult
	rc     packetCipher // read cipher installed at the peer's NEWKEYS
	rcKeys keyed
	signer HostKeySigner
	start  time.Time
	prov   string // the providers of the key agreement (and KEM), as they say
}

// kexStep is one client message of a key exchange method and the
// server's answer to it. The last step sets k.res.
type kexStep struct {
	msg    byte
	name   string
	handle func(s *Server, k *kexRun, p []byte) (reply []byte, err error)
}

// kexMethod is the message sequence of a family of key exchanges.
type kexMethod struct {
	steps []kexStep
}

// dispatch handles one packet read from the peer: transport messages are
// acted on here, and deliver reports whether p is for the layer above.
func (c *Conn) dispatch(p []byte) (deliver bool, err error) {
	t := p[0]
	switch {
	case t == wire.MsgDisconnect:
		return false, peerDisconnect(p)
	case t == wire.MsgIgnore || t == wire.MsgDebug || t == wire.MsgUnimplemented || t == wire.MsgExtInfo:
		if c.strictInitial() {
			return false, protocolError("strict kex: unexpected message %d during key exchange", t)
		}
		return false, nil
	case t == wire.MsgKexInit:
		return false, c.startKex(p)
	case c.kexCount == 0 && c.kx == nil:
		return false, protocolError("expected KEXINIT, got message %d", t)
	case t >= wire.MsgNewKeys && t < 50:
		if c.kx == nil {
			return false, protocolError("unexpected message %d outside key exchange", t)
		}
		return false, c.kexMessage(p)
	case c.kexCount == 0:
		if c.strict {
			return false, protocolError("strict kex: unexpected message %d during key exchange", t)
		}
		return false, protocolError("unexpected message %d before the first key exchange finished", t)
	case t < 50 && c.kx != nil:
		return false, protocolError("unexpected message %d during key exchange", t)
	case t == msgPing:
		return false, c.answerPing(p)
	case t == msgPong:
		return false, nil
	}
	// A re-exchange does not stop the peer's connection-layer messages:
	// RFC 4253 §7.1 forbids them after its KEXINIT, but OpenSSH's sshd
	// accepts them and some clients (asyncssh) send them.
	return true, nil
}

// strictInitial is true during a first exchange under strict kex, when
// only the exchange's own messages are allowed.
func (c *Conn) strictInitial() bool {
	return c.kexCount == 0 && c.strict
}

// startKex begins an exchange on the peer's KEXINIT p.
func (c *Conn) startKex(p []byte) error {
	if c.kx != nil {
		return protocolError("KEXINIT during key exchange")
	}
	if c.kexCount > 0 {
		c.paceClientRekey()
	}
	k := &kexRun{m: handshakeMagics{vC: c.magic.vC, vS: c.magic.vS, iC: bytes.Clone(p)}, start: time.Now(), signer: c.signer}
	ci, err := parseKexInit(k.m.iC)
	if err != nil {
		return err
	}
	if k.m.iS, err = c.ensureKexInit(ci); err != nil {
		return err
	}
	si, err := parseKexInit(k.m.iS)
	if err != nil {
		return err
	}
	if k.a, err = negotiate(ci, si); err != nil {
		return err
	}
	if err := c.noteFirstKex(ci); err != nil {
		return err
	}
	k.skip = k.a.guessWrong
	c.clientHostKeyAlgs = ci.hostKey
	c.kx = k
	return nil
}

// kexMessage feeds p (NEWKEYS or a method message) to the exchange.
func (c *Conn) kexMessage(p []byte) error {
	k := c.kx
	t := p[0]
	steps := k.a.kex.method.steps
	if k.skip && t >= 30 {
		k.skip = false
		return nil
	}
	if k.step == len(steps) {
		if t != wire.MsgNewKeys {
			return protocolError("unexpected message %d during key exchange, want NEWKEYS", t)
		}
		return c.endKex(k)
	}
	st := steps[k.step]
	if t != st.msg {
		return protocolError("unexpected message %d during key exchange, want %s (%d)", t, st.name, st.msg)
	}
	reply, err := st.handle(c.srv, k, p)
	if err != nil {
		return err
	}
	if k.step+1 < len(steps) {
		k.step++
		return c.writeKex(reply)
	}
	// The last reply, NEWKEYS and the first exchange's EXT_INFO go out in
	// one segment, which the client reads with one wake-up.
	return c.corked(func() error {
		if err := c.writeKex(reply); err != nil {
			return err
		}
		k.step++
		return c.sendNewKeys(k)
	})
}

// corked runs f with the packets it writes held back, then sends them in
// one write, whether f failed or not (what it wrote would have been sent
// without the cork too). Writes from other goroutines meanwhile are held
// with them, in order.
func (c *Conn) corked(f func() error) error {
	c.wmu.Lock()
	c.wr.corked = true
	c.wmu.Unlock()
	err := f()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if werr := c.wr.uncork(); werr != nil && c.werr == nil {
		c.werr = werr
		c.wcond.Broadcast()
		err = cmp.Or(err, werr)
	}
	return err
}

// endKex switches the read side at the peer's NEWKEYS and ends the
// exchange.
func (c *Conn) endKex(k *kexRun) error {
	c.switchRead(k.rc, k.rcKeys)
	c.kx = nil
	c.finishKex()
	c.logKeys(k)
	return nil
}

// logKeys is the line of each finished exchange (every one, the
// re-exchanges included): the algorithms, the providers that serve them
// and the sequence numbers from which they apply (logProvenance).
func (c *Conn) logKeys(k *kexRun) {
	a := k.a
	hk := hostKeyFor(c.srv.hostKeys, a.hostKey)
	hkProv := "unknown"
	if hk != nil {
		hkProv = hostKeyProvenance(c.signer, hk.pub)
	}
	c.wmu.Lock()
	steered := c.steered
	c.wmu.Unlock()
	args := []any{"kex", a.kex.name, "kex_provider", k.prov,
		"host_key", a.hostKey, "host_key_provider", hkProv, "elapsed", time.Since(k.start)}
	for i, key := range [2]string{"cipher_in_steered", "cipher_out_steered"} {
		if steered[i] != "" {
			args = append(args, key, steered[i])
		}
	}
	c.logProvenance("transport: key exchange done", args...)
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
