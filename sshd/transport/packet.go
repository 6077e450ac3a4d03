package transport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/offload/offload/sshd/wire"
)

// Packet size limits. RFC 4253 §6.1 requires 35000 bytes; like OpenSSH we
// accept packet_length up to 256 KiB.
const (
	MaxPacket  = 256 << 10
	maxTag     = 64
	minPadding = 4
	maxPadding = 255
	// MaxPayload is the largest payload WritePacket accepts.
	MaxPayload = MaxPacket - 1 - 2*32
	bufSize    = 4 + MaxPacket + maxTag
	// initialBuf is where a connection's packet buffers start; they grow
	// (once, up to bufSize) when a bigger packet comes, so an idle
	// connection does not hold 2 × 256 KiB.
	initialBuf = 36 << 10
	// readAhead is the read buffer of a connection that carries bulk
	// data: big enough to hold several full packets, so a burst of them
	// comes in with one read(2) and the connection layer can hand them
	// on together. Idle connections keep the 64 KiB they start with.
	readAhead  = 256 << 10
	startRead  = 64 << 10
	bulkPacket = 16 << 10
)

// grow returns buf with room for n bytes, reallocating only when it is
// too small.
func grow(buf []byte, n int) []byte {
	if n <= cap(buf) {
		return buf[:cap(buf)]
	}
	return make([]byte, max(n, min(2*cap(buf), bufSize)))
}

// packetReader decodes packets from the peer.
type packetReader struct {
	r   *bufio.Reader
	src io.Reader // what r reads, to grow r
	c   packetCipher
	seq uint32
	buf []byte
	// bytes and packets count traffic since the keys last changed.
	bytes, packets uint64
	// onWait, when set, runs before a read that has to wait for the
	// network (see Conn.OnReadWait).
	onWait func()
	bulk   bool // a packet of bulkPacket bytes or more has come
	// pipe, when set, reads ahead and opens several packets at once
	// (pipeline.go).
	pipe   *readPipe
	ahead  *aheadReader // the socket, read in the background while packets are opened
	reread int          // times packets read ahead were put back (a key change, an export)
	keyed               // what c was built from, for Conn.Export
	// z decompresses payloads (compress.go); zDelayed: zlib@openssh.com
	// is negotiated and starts after user authentication.
	z        *inflater
	zDelayed bool
}

// keyed is what a direction's cipher was built from: the negotiated
// algorithms and the derived keys.
type keyed struct {
	cipher *cipherSpec
	mac    *macSpec // nil when the cipher authenticates itself
	keys   directionKeys
	comp   string // the negotiated compression
}

func newPacketReader(src io.Reader) *packetReader {
	a := &aheadReader{r: src}
	return &packetReader{r: bufio.NewReaderSize(a, startRead), src: a, ahead: a, c: noneCipher{}, buf: make([]byte, initialBuf)}
}

// fill reads exactly len(b) bytes, first calling onWait when they have
// not all arrived yet.
func (p *packetReader) fill(b []byte) error {
	if p.onWait != nil && p.r.Buffered() < len(b) {
		p.onWait()
	}
	if _, err := io.ReadFull(p.r, b); err != nil {
		return connLost(err)
	}
	return nil
}

// growAhead enlarges the read buffer once a bulk packet has come, at the
// next moment the buffer is empty, so no byte is lost in the swap.
func (p *packetReader) growAhead(total int) {
	if p.r.Size() >= readAhead {
		return
	}
	p.bulk = p.bulk || total >= bulkPacket
	if p.bulk && p.r.Buffered() == 0 {
		p.r = bufio.NewReaderSize(p.src, readAhead)
	}
}

// read returns the next payload; it aliases the reader's buffer until the
// next call.
func (p *packetReader) read() ([]byte, error) {
	if p.pipe != nil {
		return p.readPiped()
	}
	h := lengthBytes(p.c)
	if err := p.fill(p.buf[:h]); err != nil {
		return nil, err
	}
	n, err := guardedLength(p.c, p.seq, p.buf[:h])
	if err != nil {
		return nil, err
	}
	if err := p.checkLength(n); err != nil {
		return nil, err
	}
	total := 4 + int(n) + p.c.tagLen()
	if total > len(p.buf) {
		var hdr [16]byte
		copy(hdr[:], p.buf[:h])
		p.buf = grow(p.buf, total)
		copy(p.buf, hdr[:h])
	}
	pkt := p.buf[:total]
	if err := p.fill(pkt[h:]); err != nil {
		return nil, err
	}
	p.growAhead(total)
	body, err := guardedOpen(p.c, p.seq, pkt)
	if body, err = openResult(p.seq, body, err); err != nil {
		return nil, err
	}
	p.seq++
	p.packets++
	p.bytes += uint64(len(pkt))
	return payloadOf(body)
}

// openResult passes on a failure of the provider (a DisconnectError) as
// it is; any other failure to open is the peer's packet failing
// authentication.
func openResult(seq uint32, body []byte, err error) ([]byte, error) {
	if _, failed := err.(*DisconnectError); failed {
		return nil, err // the provider, not the peer
	}
	if err != nil {
		return nil, &DisconnectError{Reason: wire.DisconnectMACError, Message: fmt.Sprintf("packet %d failed authentication", seq), Err: err}
	}
	return body, nil
}

func (p *packetReader) checkLength(n uint32) error {
	if n < 1+minPadding+1 || n > MaxPacket {
		return protocolError("bad packet length %d", n)
	}
	a := uint32(p.c.blockLen())
	if p.c.lengthAligned() {
		n += 4
	}
	if n%a != 0 {
		return protocolError("packet length %d is not a multiple of the block size %d", n, a)
	}
	return nil
}

// payloadOf strips padding_length and padding from a packet body.
func payloadOf(body []byte) ([]byte, error) {
	pad := int(body[0])
	if pad < minPadding || 1+pad >= len(body) {
		return nil, protocolError("bad padding length %d in a %d-byte packet", pad, len(body))
	}
	return body[1 : len(body)-pad], nil
}

func connLost(err error) error {
	return &DisconnectError{Reason: wire.DisconnectConnectionLost, Message: "reading", FromPeer: true, Err: err}
}

// packetWriter encodes packets to the peer. It is not safe for concurrent
// use; Conn serializes writers.
type packetWriter struct {
	w   io.Writer
	c   packetCipher
	seq uint32
	buf []byte
	rnd *rand.ChaCha8
	// bytes and packets count traffic since the keys last changed.
	bytes, packets uint64
	// pipe, when set, seals several packets at once and writes them in
	// order (pipeline.go).
	pipe *writePipe
	// corked, when set, keeps sealed packets in held until uncork sends
	// them in one write (see Conn.corked).
	corked bool
	held   []byte
	keyed
	// z compresses payloads (compress.go); zDelayed as packetReader's.
	z        *deflater
	zDelayed bool
}

func newPacketWriter(w io.Writer, seed [32]byte) *packetWriter {
	return &packetWriter{w: w, c: noneCipher{}, buf: make([]byte, initialBuf), rnd: rand.NewChaCha8(seed)}
}

// paddingFor returns the padding length for a payload of n bytes.
func paddingFor(c packetCipher, n int) int {
	a := c.blockLen()
	l := 1 + n
	if c.lengthAligned() {
		l += 4
	}
	pad := a - l%a
	if pad < minPadding {
		pad += a
	}
	return pad
}

// write sends one packet carrying payload.
func (p *packetWriter) write(payload []byte) error {
	if p.z != nil {
		var err error
		if payload, err = p.z.compress(payload); err != nil {
			return err
		}
	}
	if p.pipe != nil {
		if err := p.uncork(); err != nil { // what was held goes first
			return err
		}
		return p.writePiped(payload)
	}
	if len(payload) == 0 || len(payload) > MaxPayload {
		return fmt.Errorf("transport: payload of %d bytes out of range", len(payload))
	}
	pkt := p.frame(&p.buf, payload)
	out, err := guardedSeal(p.c, p.seq, pkt)
	if err != nil {
		return err
	}
	p.seq++
	p.packets++
	p.bytes += uint64(len(out))
	if p.corked {
		p.held = append(p.held, out...)
		return nil
	}
	if _, err := p.w.Write(out); err != nil {
		return fmt.Errorf("transport: write: %w", err)
	}
	return nil
}

// uncork sends the packets held since corked was set, in one write, and
// stops holding them.
func (p *packetWriter) uncork() error {
	p.corked = false
	if len(p.held) == 0 {
		return nil
	}
	held := p.held
	p.held = nil
	if _, err := p.w.Write(held); err != nil {
		return fmt.Errorf("transport: write: %w", err)
	}
	return nil
}

// frame lays out the packet carrying payload in *buf, grown as needed:
// packet_length, padding_length, payload and random padding, with room
// for the tag after them.
func (p *packetWriter) frame(buf *[]byte, payload []byte) []byte {
	pad := paddingFor(p.c, len(payload))
	length := 1 + len(payload) + pad
	if need := 4 + length + maxTag; need > len(*buf) {
		*buf = grow(*buf, need)
	}
	pkt := (*buf)[:4+length]
	binary.BigEndian.PutUint32(pkt, uint32(length))
	pkt[4] = byte(pad)
	copy(pkt[5:], payload)
	p.rnd.Read(pkt[5+len(payload):])
	return pkt
}
