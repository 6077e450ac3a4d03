package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/offload/offload/sshd/wire"
)

// inflater decodes the zlib stream (RFC 1950 around RFC 1951 deflate) of
// one direction of zlib@openssh.com, one packet at a time. The stream
// runs across packets: the peer flushes at the end of each packet, but
// OpenSSH's partial flush leaves the flush block's last bits for the next
// packet, so a packet may end inside a block, at any bit. compress/flate
// cannot stop there and go on later (it needs the next input to return
// the output of the previous one), so this decoder is written to stop
// anywhere: every step (a block header, a stored block's length, a
// dynamic block's code tables, one literal or match) either completes or
// is rolled back to its start and retried when the next packet's bytes
// come.
//
// Every packet's output is bounded (limit): a packet that would expand
// beyond it is an error, before the memory is spent.
type inflater struct {
	limit int
	in    []byte // input not yet consumed: the carry of the last packet and the current packet
	pos   int    // bit position in in
	win   []byte // the last 32 KiB of output (the window) followed by the current packet's output
	start int    // where the current packet's output starts in win
	state inflateState
	// the current block
	final        bool
	stored       int // bytes left in a stored block
	lit, dist    *huffman
	dynLit, dynD huffman // the tables of the last dynamic block
	used         bool    // some input has been decoded (see Export)
}

type inflateState uint8

const (
	inflateZlibHeader inflateState = iota
	inflateBlockHeader
	inflateStoredData
	inflateCodes
	inflateDone // a final block ended: no more data may come
)

const (
	windowSize = 32 << 10
	// maxCarry bounds the input kept from one packet for the next: at
	// most a dynamic block's header or one match, a few hundred bytes.
	maxCarry = 4 << 10
)

// errNeedInput: the step needs bits beyond this packet; it is retried.
var errNeedInput = errors.New("need input")

// errInflate is a malformed compressed stream.
type inflateError string

func (e inflateError) Error() string { return "zlib: " + string(e) }

func newInflater(limit int) *inflater { return &inflater{limit: limit} }

// inflate returns the decompressed payload of one packet. It aliases the
// inflater's buffer until the next call.
func (f *inflater) inflate(pkt []byte) ([]byte, error) {
	f.slide()
	f.in = append(f.in, pkt...)
	f.used = f.used || len(pkt) > 0
	for {
		save := f.pos
		err := f.step()
		if err == errNeedInput {
			f.pos = save
			break
		}
		if err != nil {
			return nil, err
		}
	}
	// keep the bytes not fully consumed
	used := f.pos / 8
	f.in = append(f.in[:0], f.in[used:]...)
	f.pos -= used * 8
	if len(f.in) > maxCarry {
		return nil, inflateError("a step spans more than 4 KiB of input")
	}
	return f.win[f.start:], nil
}

// slide drops output older than the window before a packet's output.
func (f *inflater) slide() {
	if n := len(f.win) - windowSize; n > windowSize {
		f.win = append(f.win[:0], f.win[n:]...)
	}
	f.start = len(f.win)
}

// step runs one step of the decoder.
func (f *inflater) step() error {
	switch f.state {
	case inflateZlibHeader:
		return f.zlibHeader()
	case inflateBlockHeader:
		return f.blockHeader()
	case inflateStoredData:
		return f.storedData()
	case inflateCodes:
		return f.codes()
	}
	if f.pos < len(f.in)*8 {
		return inflateError("data after the end of the stream")
	}
	return errNeedInput
}

// bits returns the next n (≤ 24) bits, least significant first.
func (f *inflater) bits(n int) (uint32, error) {
	if f.pos+n > len(f.in)*8 {
		return 0, errNeedInput
	}
	if v, ok := f.peek(n); ok {
		f.pos += n
		return v, nil
	}
	var v uint32
	for i := 0; i < n; {
		byteI, bit := f.pos/8, f.pos%8
		take := min(8-bit, n-i)
		v |= uint32(f.in[byteI]>>bit) & (1<<take - 1) << i
		i += take
		f.pos += take
	}
	return v, nil
}

// peek returns the next n (≤ 32) bits without consuming them, when eight
// bytes of input from the current one are at hand (the fast path of
// bits and huffman.decode).
func (f *inflater) peek(n int) (uint32, bool) {
	i := f.pos / 8
	if i+8 > len(f.in) {
		return 0, false
	}
	w := binary.LittleEndian.Uint64(f.in[i:]) >> (f.pos % 8)
	return uint32(w) & (1<<n - 1), true
}

func (f *inflater) zlibHeader() error {
	h, err := f.bits(16)
	if err != nil {
		return err
	}
	cmf, flg := h&0xff, h>>8
	switch {
	case cmf&0x0f != 8 || cmf>>4 > 7:
		return inflateError("not a deflate stream")
	case (cmf<<8|flg)%31 != 0:
		return inflateError("bad header check")
	case flg&0x20 != 0:
		return inflateError("preset dictionary")
	}
	f.state = inflateBlockHeader
	return nil
}

func (f *inflater) blockHeader() error {
	h, err := f.bits(3)
	if err != nil {
		return err
	}
	f.final = h&1 == 1
	switch h >> 1 {
	case 0:
		return f.storedHeader()
	case 1:
		f.lit, f.dist = fixedLit, fixedDist
	case 2:
		if err := f.dynamicHeader(); err != nil {
			return err
		}
	default:
		return inflateError("reserved block type")
	}
	f.state = inflateCodes
	return nil
}

func (f *inflater) storedHeader() error {
	f.pos = (f.pos + 7) &^ 7
	v, err := f.bits(16)
	if err != nil {
		return err
	}
	nv, err := f.bits(16)
	if err != nil {
		return err
	}
	if v != ^nv&0xffff {
		return inflateError("stored block length check")
	}
	f.stored = int(v)
	f.state = inflateStoredData
	return nil
}

func (f *inflater) storedData() error {
	if f.stored == 0 {
		return f.endBlock()
	}
	avail := len(f.in) - f.pos/8
	if avail == 0 {
		return errNeedInput
	}
	n := min(avail, f.stored)
	if err := f.room(n); err != nil {
		return err
	}
	f.win = append(f.win, f.in[f.pos/8:f.pos/8+n]...)
	f.pos += 8 * n
	f.stored -= n
	return nil
}

func (f *inflater) endBlock() error {
	f.state = inflateBlockHeader
	if f.final {
		f.state = inflateDone
	}
	return nil
}

// room refuses output beyond the packet's limit.
func (f *inflater) room(n int) error {
	if len(f.win)-f.start+n > f.limit {
		return &DisconnectError{Reason: wire.DisconnectCompressionError,
			Message: fmt.Sprintf("compressed packet expands beyond %d bytes", f.limit)}
	}
	return nil
}

// codes decodes literals, matches and the end of block: one, and then
// more while the input holds the longest symbol (48 bits: a 15-bit
// length code with 5 extra bits, a 15-bit distance code with 13), so no
// symbol after the first can need more input — inflate undoes a step
// that does, which would undo the symbols before it too.
func (f *inflater) codes() error {
	for {
		err := f.code()
		if err != nil || f.state != inflateCodes || f.pos/8+8 > len(f.in) {
			return err
		}
	}
}

// code decodes one literal, end of block, or match.
func (f *inflater) code() error {
	sym, err := f.lit.decode(f)
	if err != nil {
		return err
	}
	switch {
	case sym < 256:
		if err := f.room(1); err != nil {
			return err
		}
		f.win = append(f.win, byte(sym))
		return nil
	case sym == 256:
		return f.endBlock()
	case sym > 285:
		return inflateError("bad length code")
	}
	length, err := f.extra(lengthBase[sym-257], lengthExtra[sym-257])
	if err != nil {
		return err
	}
	dsym, err := f.dist.decode(f)
	if err != nil {
		return err
	}
	if dsym > 29 {
		return inflateError("bad distance code")
	}
	dist, err := f.extra(distBase[dsym], distExtra[dsym])
	if err != nil {
		return err
	}
	if dist > len(f.win) {
		return inflateError("distance before the start of the stream")
	}
	if err := f.room(length); err != nil {
		return err
	}
	from := len(f.win) - dist
	if dist >= length {
		f.win = append(f.win, f.win[from:from+length]...)
		return nil
	}
	for i := 0; i < length; i++ { // overlapping copies repeat the data
		f.win = append(f.win, f.win[from+i])
	}
	return nil
}

func (f *inflater) extra(base uint16, n uint8) (int, error) {
	v, err := f.bits(int(n))
	return int(base) + int(v), err
}

// dynamicHeader reads a dynamic block's code tables.
func (f *inflater) dynamicHeader() error {
	h, err := f.bits(14)
	if err != nil {
		return err
	}
	nlit, ndist, nclen := int(h&31)+257, int(h>>5&31)+1, int(h>>10)+4
	if nlit > 286 || ndist > 30 {
		return inflateError("too many length or distance codes")
	}
	var clens [19]uint8
	for i := 0; i < nclen; i++ {
		v, err := f.bits(3)
		if err != nil {
			return err
		}
		clens[clenOrder[i]] = uint8(v)
	}
	var clh huffman
	if err := clh.build(clens[:]); err != nil {
		return err
	}
	lens := make([]uint8, nlit+ndist)
	for i := 0; i < len(lens); {
		sym, err := clh.decode(f)
		if err != nil {
			return err
		}
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		val, n, err := f.repeat(sym, lens, i)
		if err != nil {
			return err
		}
		if i+n > len(lens) {
			return inflateError("code lengths repeat past the end")
		}
		for ; n > 0; n-- {
			lens[i] = val
			i++
		}
	}
	if lens[256] == 0 {
		return inflateError("no end-of-block code")
	}
	if err := f.dynLit.build(lens[:nlit]); err != nil {
		return err
	}
	if err := f.dynD.build(lens[nlit:]); err != nil {
		return err
	}
	f.lit, f.dist = &f.dynLit, &f.dynD
	return nil
}

// repeat decodes code-length symbols 16 to 18: what to repeat, how often.
func (f *inflater) repeat(sym int, lens []uint8, i int) (uint8, int, error) {
	switch sym {
	case 16:
		if i == 0 {
			return 0, 0, inflateError("repeat with no previous length")
		}
		n, err := f.extra(3, 2)
		return lens[i-1], n, err
	case 17:
		n, err := f.extra(3, 3)
		return 0, n, err
	}
	n, err := f.extra(11, 7)
	return 0, n, err
}

// huffman is a canonical Huffman code, decoded a bit at a time by the
// count of codes of each length (RFC 1951 §3.2.2), with a table for the
// codes of up to fastBits bits, which most symbols have: indexed by the
// next fastBits bits of input, an entry is the symbol << 4 | its length
// (0: a longer code, decoded a bit at a time).
type huffman struct {
	count  [16]uint16
	symbol [288]uint16
	fast   [1 << fastBits]uint16
}

const fastBits = 9

func (h *huffman) build(lens []uint8) error {
	h.count = [16]uint16{}
	for _, l := range lens {
		h.count[l]++
	}
	h.count[0] = 0
	left := 1
	for l := 1; l < 16; l++ {
		left = left<<1 - int(h.count[l])
		if left < 0 {
			return inflateError("over-subscribed code")
		}
	}
	var offs [16]uint16
	for l := 1; l < 15; l++ {
		offs[l+1] = offs[l] + h.count[l]
	}
	for sym, l := range lens {
		if l != 0 {
			h.symbol[offs[l]] = uint16(sym)
			offs[l]++
		}
	}
	h.buildFast(lens)
	return nil
}

// buildFast fills the table of short codes. A code is sent most
// significant bit first, so its bits reversed are the table index's low
// bits; every index with those low bits decodes to it.
func (h *huffman) buildFast(lens []uint8) {
	h.fast = [1 << fastBits]uint16{}
	var next [16]int // the next code of each length (RFC 1951 §3.2.2)
	code := 0
	for l := 1; l < 16; l++ {
		code = (code + int(h.count[l-1])) << 1
		next[l] = code
	}
	for sym, l := range lens {
		if l == 0 || l > fastBits {
			if l != 0 {
				next[l]++
			}
			continue
		}
		rev := int(bits.Reverse16(uint16(next[l])) >> (16 - l))
		next[l]++
		for i := rev; i < len(h.fast); i += 1 << l {
			h.fast[i] = uint16(sym)<<4 | uint16(l)
		}
	}
}

// decode reads one symbol; incomplete codes that hit no symbol are errors.
func (h *huffman) decode(f *inflater) (int, error) {
	if v, ok := f.peek(fastBits); ok {
		if e := h.fast[v]; e&15 != 0 {
			f.pos += int(e & 15)
			return int(e >> 4), nil
		}
	}
	code, first, index := 0, 0, 0
	for l := 1; l < 16; l++ {
		b, err := f.bits(1)
		if err != nil {
			return 0, err
		}
		code |= int(b)
		n := int(h.count[l])
		if code-first < n {
			return int(h.symbol[index+code-first]), nil
		}
		index += n
		first = (first + n) << 1
		code <<= 1
	}
	return 0, inflateError("invalid code")
}

var clenOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

var (
	lengthBase = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59,
		67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
		1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// The fixed codes of block type 1 (RFC 1951 §3.2.6).
var fixedLit, fixedDist = fixedCodes()

func fixedCodes() (*huffman, *huffman) {
	var lens [288]uint8
	for i := range lens {
		switch {
		case i < 144:
			lens[i] = 8
		case i < 256:
			lens[i] = 9
		case i < 280:
			lens[i] = 7
		default:
			lens[i] = 8
		}
	}
	lit, dist := &huffman{}, &huffman{}
	lit.build(lens[:])
	var d [30]uint8
	for i := range d {
		d[i] = 5
	}
	dist.build(d[:])
	return lit, dist
}
