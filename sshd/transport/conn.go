package transport

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offload/offload/internal/rawio"
	"github.com/offload/offload/sshd/wire"
)

// Limits of the queue that holds outgoing packets while a key exchange is
// in progress. Large packets wait once maxQueueBytes are queued; small
// ones (window adjustments, replies) are always queued up to
// maxQueuePackets, so a reader that also writes cannot deadlock.
const (
	maxQueueBytes   = 256 << 10
	maxQueuePackets = 1024
	smallPacket     = 1 << 10
	// maxPacketsPerKey is the RFC 4344 packet limit: rekey before the
	// 32-bit sequence number could wrap.
	maxPacketsPerKey = 1 << 31
	// disconnectTimeout bounds the write of a final DISCONNECT.
	disconnectTimeout = 2 * time.Second
)

// Conn is the server side of one SSH transport connection. It implements
// wire.PacketConn and wire.Disconnector.
type Conn struct {
	srv    *Server
	nc     net.Conn
	signer HostKeySigner
	log    *slog.Logger    // the connection's lines (ConnOptions.Logger, or the Server's with "remote")
	id     uint64          // ConnOptions.ID
	magic  handshakeMagics // vC, vS (iC and iS are per exchange)

	sessionID []byte
	strict    bool    // kex-strict negotiated
	extInfo   bool    // the client asked for EXT_INFO
	kexCount  int     // completed exchanges, owned by the reader
	kx        *kexRun // the exchange in progress, owned by the reader

	initialHostKey    []byte      // K_S of the first exchange
	clientHostKeyAlgs []string    // the client's last server_host_key_algorithms
	authenticated     atomic.Bool // user authentication succeeded: PING is answered, re-exchanges run
	authStarted       atomic.Bool // the client began user authentication: the server's re-exchanges wait
	pace              rekeyAllowance
	zStarted          atomic.Bool // USERAUTH_SUCCESS is sent: delayed compression has started

	rmu  sync.Mutex // held by ReadPacket
	rd   *packetReader
	rerr error
	qa   quickAcker // owned by the reader
	last uint32     // sequence number of the packet ReadPacket returned last
	// keysFrom are the sequence numbers of the first packet read and
	// written under the current keys, for the provenance lines.
	keysFromIn, keysFromOut uint32

	wmu        sync.Mutex
	wcond      sync.Cond
	wr         *packetWriter
	werr       error
	kexPending bool   // our KEXINIT is sent; ordinary writes queue
	ourInit    []byte // our KEXINIT payload for the exchange in progress
	queue      [][]byte
	// clientCiphers is the client's last pair of encryption_algorithms
	// lists (client to server, server to client), which a measured offer
	// is chosen from, one per direction; kexInitTimer sends our first
	// KEXINIT when the client's is late.
	clientCiphers [2][]string
	kexInitTimer  *time.Timer
	// steered says, per direction, why our KEXINIT of the exchange in
	// progress steered the client off its cipher ("" when it did not).
	steered    [2]string
	queueBytes int
	rLimit     uint64 // read bytes allowed under the current keys
	wLimit     uint64

	rekeyDue  atomic.Bool
	kexTimer  *time.Timer
	kexGen    uint64                // counts our KEXINITs, to spot a stale timer
	abortErr  atomic.Pointer[error] // why the connection was cut from outside the reader
	timer     *time.Timer
	closeOnce sync.Once
	closed    atomic.Bool
	piped     atomic.Bool // the write side pipelines: Close writes out what is in flight
}

var (
	_ wire.PacketConn    = (*Conn)(nil)
	_ wire.Disconnector  = (*Conn)(nil)
	_ wire.Unimplementer = (*Conn)(nil)
)

// errNoSigner: a Server with only HostPublicKeys was given a connection
// without a HostKeySigner.
var errNoSigner = errors.New("transport: no HostKeySigner for this connection's host keys")

func newConn(s *Server, nc net.Conn, o *ConnOptions) (*Conn, error) {
	signer := s.signer
	if o != nil && o.Signer != nil {
		signer = o.Signer
	}
	if signer == nil {
		return nil, errNoSigner
	}
	nc = rawio.WrapConn(nc) // a *net.TCPConn reads and writes without scheduler hand-offs
	var seed [32]byte
	rand.Read(seed[:])
	c := &Conn{
		srv: s, nc: nc, signer: signer,
		rd: newPacketReader(nc),
		wr: newPacketWriter(nc, seed),
		qa: newQuickAcker(nc),
	}
	if o != nil {
		c.id = o.ID
	}
	if o != nil && o.Logger != nil {
		c.log = o.Logger
	} else {
		c.log = s.log.With("remote", nc.RemoteAddr().String())
	}
	c.magic.vS = s.version[:len(s.version)-2]
	c.wcond.L = &c.wmu
	c.rLimit, c.wLimit = maxPacketsPerKey, maxPacketsPerKey
	return c, nil
}

// SessionID returns the exchange hash of the first key exchange.
func (c *Conn) SessionID() []byte { return c.sessionID }

// ClientVersion returns the client's identification string.
func (c *Conn) ClientVersion() string { return string(c.magic.vC) }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// LocalAddr returns the server's address of the connection.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// KexCount returns the number of completed key exchanges.
func (c *Conn) KexCount() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.kexCount
}

// ReadPacket returns the next payload that is not a transport message. Key
// re-exchanges started by either side are run here.
func (c *Conn) ReadPacket() ([]byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return nil, c.rerr
	}
	p, err := c.readPacket()
	if err != nil {
		if ae := c.abortErr.Load(); ae != nil {
			err = *ae
		}
		c.rerr = c.fail(err)
		return nil, c.rerr
	}
	c.last = c.rd.seq - 1
	return p, nil
}

// OnReadWait makes ReadPacket call f, on the reading goroutine, each time
// it is about to wait for bytes from the peer; packets that have already
// arrived are returned without calling it. A reader that holds back work
// to batch it (the connection layer coalesces consecutive channel data
// into one pipe write) does it in f, so nothing is held while the
// connection waits. f must not call ReadPacket, and must not wait for
// anything the peer sends. Call OnReadWait from the reading goroutine.
func (c *Conn) OnReadWait(f func()) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rd.onWait = f
}

// Unimplemented answers the packet ReadPacket returned last with
// SSH_MSG_UNIMPLEMENTED. Call it from the reading goroutine.
func (c *Conn) Unimplemented() error {
	p := binary.BigEndian.AppendUint32([]byte{wire.MsgUnimplemented}, c.last)
	return c.WritePacket(p)
}

// read reads one packet; early in the connection it asks for a prompt ACK
// of it. A failed read (the peer closed, a bad packet) asks nothing: there
// is no next packet to hurry, and the ACK would be one more segment for
// both ends to process.
func (c *Conn) read() ([]byte, error) {
	p, err := c.rd.read()
	if err == nil {
		c.qa.ack()
		if c.rd.compressing() {
			return c.inflate(p)
		}
	}
	return p, err
}

func (c *Conn) readPacket() ([]byte, error) {
	for {
		p, err := c.read()
		if err != nil {
			return nil, err
		}
		deliver, err := c.dispatch(p)
		if err != nil {
			return nil, err
		}
		if !deliver {
			continue
		}
		c.noteAuthStart(p[0])
		if err := c.checkReadRekey(); err != nil {
			return nil, err
		}
		return p, nil
	}
}

// peerDisconnect decodes SSH_MSG_DISCONNECT from the peer.
func peerDisconnect(p []byte) error {
	r := wire.NewReader(p[1:])
	reason := r.Uint32("reason code")
	msg := r.String("description")
	if len(msg) > 256 {
		msg = msg[:256]
	}
	return &DisconnectError{Reason: reason, Message: fmt.Sprintf("%q", msg), FromPeer: true}
}

// WritePacket sends payload, or queues a copy while a key exchange is in
// progress; it blocks when the queue is full.
func (c *Conn) WritePacket(payload []byte) error {
	if len(payload) == 0 || len(payload) > MaxPayload {
		return fmt.Errorf("transport: payload of %d bytes out of range (1 to %d)", len(payload), MaxPayload)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for c.werr == nil && c.kexPending {
		if c.queueHasRoom(len(payload)) {
			c.enqueue(payload)
			if payload[0] == wire.MsgUserAuthSuccess {
				c.authenticated.Store(true) // it goes out first when the exchange ends
			}
			return nil
		}
		c.wcond.Wait()
	}
	if c.werr != nil {
		return c.werr
	}
	if payload[0] == wire.MsgUserAuthSuccess {
		// Authentication ends with this packet: a re-exchange held
		// during it may start after it, never before.
		err := c.writeLocked(payload)
		c.authenticated.Store(true)
		return err
	}
	if c.writeNeedsRekey() && !c.rekeyHeld(c.wr.packets) {
		c.logRekeyLocked("bytes_out", c.wr.bytes)
		if err := c.sendKexInitLocked(); err != nil {
			return err
		}
		c.enqueue(payload)
		return nil
	}
	return c.writeLocked(payload)
}

func (c *Conn) queueHasRoom(n int) bool {
	if n <= smallPacket {
		return len(c.queue) < maxQueuePackets
	}
	return len(c.queue) < maxQueuePackets && c.queueBytes+n <= maxQueueBytes
}

func (c *Conn) enqueue(p []byte) {
	c.queue = append(c.queue, append([]byte(nil), p...))
	c.queueBytes += len(p)
}

// writeLocked sends one packet; a failure is sticky.
func (c *Conn) writeLocked(p []byte) error {
	if c.werr != nil {
		return c.werr
	}
	if err := c.wr.write(p); err != nil {
		c.werr = err
		c.wcond.Broadcast()
		return err
	}
	c.afterWrite(p)
	return nil
}

func (c *Conn) writeNeedsRekey() bool {
	return c.wr.bytes >= c.wLimit || c.wr.packets >= maxPacketsPerKey || c.rekeyDue.Load()
}

// checkReadRekey starts a key exchange when the read side has used up
// its keys.
func (c *Conn) checkReadRekey() error {
	if c.rd.bytes < c.rLimit && c.rd.packets < maxPacketsPerKey && !c.rekeyDue.Load() {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.kexPending || c.werr != nil || c.rekeyHeld(c.rd.packets) {
		return nil
	}
	c.logRekeyLocked("bytes_in", c.rd.bytes)
	return c.sendKexInitLocked()
}

// logRekeyLocked notes why the server starts a key re-exchange: the
// byte count of the side that hit its limit, or the timer.
func (c *Conn) logRekeyLocked(side string, n uint64) {
	c.srv.log.Debug("transport: starting key re-exchange", "remote", c.nc.RemoteAddr().String(),
		side, n, "timer", c.rekeyDue.Load())
}

// Disconnect sends SSH_MSG_DISCONNECT with reason and message, then closes
// the connection.
func (c *Conn) Disconnect(reason uint32, message string) error {
	c.sendDisconnect(reason, message)
	return c.Close()
}

func (c *Conn) sendDisconnect(reason uint32, message string) {
	if c.closed.Load() {
		return
	}
	c.nc.SetWriteDeadline(time.Now().Add(disconnectTimeout))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return
	}
	p := wire.AppendUint32([]byte{wire.MsgDisconnect}, reason)
	p = wire.AppendString(p, message)
	p = wire.AppendString(p, "")
	c.writeLocked(p)
	c.werr = ErrClosed
	c.wcond.Broadcast()
}

// fail ends the connection after err: a problem found here is told to the
// peer with SSH_MSG_DISCONNECT first.
func (c *Conn) fail(err error) error {
	var de *DisconnectError
	switch {
	case errors.As(err, &de) && de.Text != "":
		c.nc.Write([]byte(de.Text + "\r\n"))
	case de != nil && !de.FromPeer:
		c.sendDisconnect(de.Reason, de.Message)
	}
	c.Close()
	return err
}

// Close closes the connection and releases the ciphers.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.flushPipe()
		err = c.nc.Close()
		c.wmu.Lock()
		if c.werr == nil {
			c.werr = ErrClosed
		}
		c.stopTimersLocked()
		c.wr.install(noneCipher{}, 0, nil)
		c.queue = nil
		c.wcond.Broadcast()
		c.wmu.Unlock()
		go c.releaseReader()
	})
	return err
}

// flushPipe writes out the packets a pipelined write side still has in
// flight (a DISCONNECT, the last channel data), within disconnectTimeout.
func (c *Conn) flushPipe() {
	if !c.piped.Load() {
		return
	}
	c.nc.SetWriteDeadline(time.Now().Add(disconnectTimeout))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.wr.stopPipe(); err != nil && c.werr == nil {
		c.werr = err
	}
	c.piped.Store(false)
}

// pipeFailed ends the connection after its write pipeline failed (the
// token's seal, the socket): nothing more can be sent in order.
func (c *Conn) pipeFailed(err error) {
	c.abortErr.CompareAndSwap(nil, &err)
	c.Close()
}

func (c *Conn) stopTimersLocked() {
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.kexTimer != nil {
		c.kexTimer.Stop()
	}
}

// releaseReader releases the read cipher once ReadPacket has returned.
func (c *Conn) releaseReader() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr == nil {
		c.rerr = ErrClosed
	}
	c.rd.install(noneCipher{}, 0)
	if c.kx != nil && c.kx.rc != nil {
		c.kx.rc.Close()
		c.kx.rc = nil
	}
}

// armKexTimerLocked bounds the exchange our KEXINIT just started.
func (c *Conn) armKexTimerLocked() {
	c.kexGen++
	gen := c.kexGen
	if c.kexTimer != nil {
		c.kexTimer.Stop()
	}
	c.kexTimer = time.AfterFunc(c.srv.kexT, func() { c.kexTimedOut(gen) })
}

// kexTimedOut disconnects a peer that left our exchange gen unfinished.
func (c *Conn) kexTimedOut(gen uint64) {
	c.wmu.Lock()
	stale := !c.kexPending || gen != c.kexGen
	c.wmu.Unlock()
	if stale {
		return
	}
	var err error = kexError(nil, "key exchange not finished within %v", c.srv.kexT)
	c.abortErr.Store(&err)
	c.fail(err)
}
