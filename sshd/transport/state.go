package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// The hand-over of a connection between processes: the pre-auth worker
// runs the key exchange and user authentication, then exports the
// connection's state; the monitor passes the socket and the state to the
// post-auth process, which resumes the connection where it stood. The
// client sees nothing: the same keys, counters and sequence numbers go on.

// State is everything a resumed connection needs besides its socket. It
// holds the session keys: it travels only between the processes of one
// server, never to logs.
type State struct {
	SessionID     []byte
	ClientVersion string // without CR LF
	ServerVersion string
	Strict        bool // kex-strict negotiated
	ExtInfo       bool // the client asked for EXT_INFO
	KexCount      uint32
	In, Out       DirectionState // client to server, server to client
	// Buffered holds bytes read from the socket but not yet decoded: the
	// start of the packets that follow.
	Buffered []byte
}

// DirectionState is one direction's keys and counters.
type DirectionState struct {
	Cipher, MAC     string // MAC is empty for ciphers with their own
	Key, IV, MACKey []byte // IV is the current one (next nonce, moved counter)
	Seq             uint32
	Bytes, Packets  uint64 // since the keys last changed, for the rekey limits
	// Compression is the negotiated compression ("none" or
	// zlib@openssh.com); a resumed connection is authenticated, so
	// zlib@openssh.com starts there with a fresh stream.
	Compression string
}

// Limits of a marshaled State.
const (
	stateVersion = 2
	maxStateName = 64
	maxStateKey  = 64
	// MaxBuffered bounds State.Buffered: the read buffer of a connection
	// that has not carried bulk data.
	MaxBuffered = readAhead
	// MaxStateSize bounds a marshaled State.
	MaxStateSize = MaxBuffered + 4<<10
)

// ErrBusy is returned by Export while a key exchange is in progress.
var ErrBusy = errors.New("transport: key exchange in progress")

// Export stops the connection and returns its state; the connection is
// closed afterwards, without a DISCONNECT, and the state is the only way
// to go on with it. The caller must have stopped calling ReadPacket and
// WritePacket. Export fails while a key exchange is in progress, before
// the first exchange has finished, and after a read or write error.
func (c *Conn) Export() (*State, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.wmu.Lock()
	st, err := c.exportLocked()
	if err == nil {
		c.werr = ErrClosed
		c.rerr = ErrClosed
	}
	c.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	c.detach()
	return st, nil
}

func (c *Conn) exportLocked() (*State, error) {
	switch {
	case c.rerr != nil:
		return nil, c.rerr
	case c.werr != nil:
		return nil, c.werr
	case c.kexPending || len(c.queue) > 0:
		return nil, ErrBusy
	case c.kexCount == 0:
		return nil, errors.New("transport: no key exchange has finished")
	case c.compressionInUse():
		return nil, errors.New("transport: a compression stream has carried data: its state cannot be exported")
	}
	// Packets in flight are written out; packets read ahead go back to the
	// unread bytes, with the read nonce moved back to the first of them.
	if err := c.wr.stopPipe(); err != nil {
		return nil, err
	}
	c.piped.Store(false)
	c.rd.stopPipe()
	if err := c.settleReadAhead(); err != nil {
		c.startPipesLocked()
		return nil, err
	}
	st, err := c.exportState()
	if err != nil {
		c.startPipesLocked()
	}
	return st, err
}

func (c *Conn) exportState() (*State, error) {
	in, err := exportDirection(c.rd.c, c.rd.keyed, c.rd.seq, c.rd.bytes, c.rd.packets)
	if err != nil {
		return nil, err
	}
	out, err := exportDirection(c.wr.c, c.wr.keyed, c.wr.seq, c.wr.bytes, c.wr.packets)
	if err != nil {
		return nil, err
	}
	buffered, err := c.rd.r.Peek(c.rd.r.Buffered())
	if err != nil {
		return nil, fmt.Errorf("transport: export: %w", err)
	}
	buffered = append(clone(buffered), c.rd.ahead.have...)
	if len(buffered) > MaxBuffered {
		return nil, fmt.Errorf("%w: %d bytes read ahead, at most %d travel", ErrBusy, len(buffered), MaxBuffered)
	}
	return &State{
		SessionID: append([]byte(nil), c.sessionID...), ClientVersion: string(c.magic.vC),
		ServerVersion: string(c.magic.vS), Strict: c.strict, ExtInfo: c.extInfo,
		KexCount: uint32(c.kexCount), In: in, Out: out, Buffered: buffered,
	}, nil
}

func exportDirection(pc packetCipher, k keyed, seq uint32, bytes, packets uint64) (DirectionState, error) {
	iv, err := pc.resumeIV()
	if err != nil {
		return DirectionState{}, err
	}
	if iv == nil {
		iv = k.keys.iv
	}
	d := DirectionState{Cipher: k.cipher.name, Key: clone(k.keys.key), IV: clone(iv),
		MACKey: clone(k.keys.macKey), Seq: seq, Bytes: bytes, Packets: packets, Compression: k.comp}
	if k.mac != nil {
		d.MAC = k.mac.name
	}
	return d, nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// detach closes this process's socket and releases the ciphers and timers,
// sending nothing to the peer.
func (c *Conn) detach() {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.nc.Close()
		c.wmu.Lock()
		c.stopTimersLocked()
		c.wr.install(noneCipher{}, 0, nil)
		c.piped.Store(false)
		c.wcond.Broadcast()
		c.wmu.Unlock()
		c.rd.install(noneCipher{}, 0)
	})
}

// Resume continues, on nc, a connection exported by Export (in this or
// another process), as if it had been running here all along, and logs
// the providers of the ciphers it rebuilt ("transport: keys resumed",
// with the sequence numbers from which this process handles the
// packets). On failure nc is closed.
func (s *Server) Resume(nc net.Conn, st *State, o *ConnOptions) (*Conn, error) {
	c, err := newConn(s, nc, o)
	if err == nil {
		err = c.resume(st)
	}
	if err != nil {
		if c != nil {
			c.Close()
		} else {
			nc.Close()
		}
		return nil, err
	}
	c.logProvenance("transport: keys resumed")
	return c, nil
}

func (c *Conn) resume(st *State) error {
	if err := st.validate(); err != nil {
		return err
	}
	rc, rk, err := resumeCipher(c.srv, st.In)
	if err != nil {
		return err
	}
	wc, wk, err := resumeCipher(c.srv, st.Out)
	if err != nil {
		rc.Close()
		return err
	}
	c.sessionID, c.strict, c.extInfo = clone(st.SessionID), st.Strict, st.ExtInfo
	c.kexCount = int(st.KexCount)
	c.authenticated.Store(true) // connections are handed over after authentication
	c.zStarted.Store(true)
	c.magic.vC, c.magic.vS = []byte(st.ClientVersion), []byte(st.ServerVersion)
	c.rd.resumeFrom(c.nc, st.Buffered)
	c.rd.c, c.rd.keyed, c.rd.seq, c.rd.bytes, c.rd.packets = rc, rk, st.In.Seq, st.In.Bytes, st.In.Packets
	c.wr.c, c.wr.keyed, c.wr.seq, c.wr.bytes, c.wr.packets = wc, wk, st.Out.Seq, st.Out.Bytes, st.Out.Packets
	c.keysFromIn, c.keysFromOut = st.In.Seq, st.Out.Seq // the first packets this process handles
	c.watchFallback(rc, "in", c.keysFromIn)
	c.watchFallback(wc, "out", c.keysFromOut)
	c.rd.setCompression(rk.comp, true)
	c.wr.setCompression(wk.comp, true)
	c.rLimit, c.wLimit = c.srv.rekeyLimit(rk.cipher), c.srv.rekeyLimit(wk.cipher)
	c.wmu.Lock()
	c.startPipesLocked()
	c.armTimerLocked()
	c.wmu.Unlock()
	return nil
}

// settleReadAhead ends a background read of the socket (the read
// pipeline's), so that every byte this process has read travels in the
// state: the read is cut short by a deadline, and what it got is kept.
func (c *Conn) settleReadAhead() error {
	a := c.rd.ahead
	if !a.inFlight {
		return nil
	}
	c.nc.SetReadDeadline(time.Now())
	a.settle()
	c.nc.SetReadDeadline(time.Time{})
	if errors.Is(a.err, os.ErrDeadlineExceeded) {
		a.err = nil
	}
	if a.err != nil {
		return fmt.Errorf("transport: export: %w", a.err)
	}
	return nil
}

// startPipesLocked pipelines each direction whose AEAD serves several
// calls at once; the caller holds wmu, and rmu or owns the reader.
func (c *Conn) startPipesLocked() {
	c.rd.startPipe(c.srv.pipeDepth)
	c.wr.startPipe(c.srv.pipeDepth, c.pipeFailed)
	c.piped.Store(c.wr.pipe != nil)
}

// resumeCipher rebuilds one direction's cipher at its exported position.
func resumeCipher(s *Server, d DirectionState) (packetCipher, keyed, error) {
	k := keyed{cipher: findCipher(d.Cipher), mac: findMAC(d.MAC),
		keys: directionKeys{iv: clone(d.IV), key: clone(d.Key), macKey: clone(d.MACKey)}, comp: d.Compression}
	pc, err := newPacketCipher(s.reg, k.cipher, k.mac, k.keys)
	if err != nil {
		return nil, keyed{}, kexError(err, "resuming %s", d.Cipher)
	}
	return pc, k, nil
}

// resumeFrom makes the reader return buffered before what src delivers.
func (p *packetReader) resumeFrom(src io.Reader, buffered []byte) {
	p.ahead = &aheadReader{r: src}
	p.src = p.ahead
	if len(buffered) > 0 {
		p.src = &prefixReader{prefix: clone(buffered), r: p.ahead}
	}
	p.r.Reset(p.src)
}

// prefixReader reads prefix, then r.
type prefixReader struct {
	prefix []byte
	r      io.Reader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.prefix) == 0 {
		return p.r.Read(b)
	}
	n := copy(b, p.prefix)
	p.prefix = p.prefix[n:]
	return n, nil
}

// validate checks a State from another process before it is used.
func (st *State) validate() error {
	if len(st.SessionID) == 0 || st.KexCount == 0 {
		return stateError("no finished key exchange")
	}
	if len(st.Buffered) > MaxBuffered {
		return stateError("%d buffered bytes, at most %d", len(st.Buffered), MaxBuffered)
	}
	for _, d := range []*DirectionState{&st.In, &st.Out} {
		if err := d.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (d *DirectionState) validate() error {
	switch d.Compression {
	case "", compressionNone, compressionDelayed:
	default:
		return stateError("unknown compression %q", d.Compression)
	}
	cs := findCipher(d.Cipher)
	if cs == nil {
		return stateError("unknown cipher %q", d.Cipher)
	}
	if len(d.Key) != cs.keySize || len(d.IV) != cs.ivSize {
		return stateError("%s: key %d and IV %d bytes, want %d and %d", d.Cipher, len(d.Key), len(d.IV), cs.keySize, cs.ivSize)
	}
	if cs.macBuiltIn {
		if d.MAC != "" || len(d.MACKey) != 0 {
			return stateError("%s has its own MAC, but state names %q", d.Cipher, d.MAC)
		}
		return nil
	}
	ms := findMAC(d.MAC)
	if ms == nil {
		return stateError("unknown MAC %q", d.MAC)
	}
	if len(d.MACKey) != ms.keySize {
		return stateError("%s: MAC key %d bytes, want %d", d.MAC, len(d.MACKey), ms.keySize)
	}
	return nil
}

// StateError reports a State that cannot be resumed.
type StateError struct{ Msg string }

func (e *StateError) Error() string { return "transport: connection state: " + e.Msg }

func stateError(format string, args ...any) error {
	return &StateError{Msg: fmt.Sprintf(format, args...)}
}

// MarshalBinary encodes the state for another process of the server.
func (st *State) MarshalBinary() ([]byte, error) {
	b := []byte{stateVersion}
	b = wire.AppendBytes(b, st.SessionID)
	b = wire.AppendString(b, st.ClientVersion)
	b = wire.AppendString(b, st.ServerVersion)
	b = wire.AppendBool(b, st.Strict)
	b = wire.AppendBool(b, st.ExtInfo)
	b = wire.AppendUint32(b, st.KexCount)
	b = st.In.append(b)
	b = st.Out.append(b)
	b = wire.AppendBytes(b, st.Buffered)
	b = wire.AppendString(b, st.In.Compression)
	return wire.AppendString(b, st.Out.Compression), nil
}

func (d *DirectionState) append(b []byte) []byte {
	b = wire.AppendString(b, d.Cipher)
	b = wire.AppendString(b, d.MAC)
	for _, k := range [][]byte{d.Key, d.IV, d.MACKey} {
		b = wire.AppendBytes(b, k)
	}
	b = wire.AppendUint32(b, d.Seq)
	b = wire.AppendUint64(b, d.Bytes)
	return wire.AppendUint64(b, d.Packets)
}

// UnmarshalBinary decodes and checks a state from MarshalBinary.
func (st *State) UnmarshalBinary(p []byte) error {
	if len(p) > MaxStateSize {
		return stateError("%d bytes, at most %d", len(p), MaxStateSize)
	}
	r := &stateReader{Reader: wire.NewReader(p)}
	if v := r.Byte("version"); r.Err() == nil && v != stateVersion {
		return stateError("version %d, want %d", v, stateVersion)
	}
	var s State
	s.SessionID = r.bytes("session id", maxStateKey)
	s.ClientVersion = string(r.bytes("client version", maxVersionLine))
	s.ServerVersion = string(r.bytes("server version", maxVersionLine))
	s.Strict, s.ExtInfo = r.boolean("strict"), r.boolean("ext-info")
	s.KexCount = r.Uint32("kex count")
	s.In, s.Out = r.direction(), r.direction()
	s.Buffered = r.bytes("buffered", MaxBuffered)
	s.In.Compression = string(r.bytes("compression in", maxStateName))
	s.Out.Compression = string(r.bytes("compression out", maxStateName))
	if err := r.done(); err != nil {
		return &StateError{Msg: err.Error()}
	}
	if err := s.validate(); err != nil {
		return err
	}
	*st = s
	return nil
}

// stateReader is a wire.Reader that also bounds field lengths.
type stateReader struct {
	*wire.Reader
	err error // the first over-long field
}

// bytes reads a copy of a string of at most max bytes.
func (r *stateReader) bytes(field string, max int) []byte {
	b := r.Bytes(field)
	if len(b) > max && r.err == nil {
		r.err = &wire.FieldError{Field: field, Err: fmt.Errorf("%d bytes, at most %d", len(b), max)}
	}
	if r.err != nil {
		return nil
	}
	return clone(b)
}

// boolean reads a boolean that must be encoded as 0 or 1.
func (r *stateReader) boolean(field string) bool {
	b := r.Byte(field)
	if b > 1 && r.err == nil {
		r.err = &wire.FieldError{Field: field, Err: fmt.Errorf("boolean %d, want 0 or 1", b)}
	}
	return b == 1
}

func (r *stateReader) direction() DirectionState {
	d := DirectionState{Cipher: string(r.bytes("cipher", maxStateName)), MAC: string(r.bytes("mac", maxStateName))}
	d.Key, d.IV, d.MACKey = r.bytes("key", maxStateKey), r.bytes("iv", maxStateKey), r.bytes("mac key", maxStateKey)
	d.Seq = r.Uint32("seq")
	d.Bytes, d.Packets = r.Uint64("bytes"), r.Uint64("packets")
	return d
}

func (r *stateReader) done() error {
	if r.err != nil {
		return r.err
	}
	return r.Done()
}
