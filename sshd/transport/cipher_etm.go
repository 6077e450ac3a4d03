package transport

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"fmt"

	"github.com/offload/offload/provider"
)

// etmCipher is a stream cipher (aes-ctr) with an encrypt-then-MAC MAC
// (hmac-sha2-*-etm@openssh.com, umac-*-etm@openssh.com, OpenSSH PROTOCOL
// §1.5): packet_length is sent in the clear, the MAC covers the sequence
// number, the clear length and the ciphertext, and is checked before
// decrypting.
type etmCipher struct {
	stream cipher.Stream
	packetMAC
	ctr ctrPosition
}

func newEtMCipher(reg *provider.Registry, cs *cipherSpec, ms *macSpec, k directionKeys) (*etmCipher, error) {
	s, err := reg.Stream(cs.stream, k.key, k.iv)
	if err != nil {
		return nil, fmt.Errorf("transport: %s: %w", cs.name, err)
	}
	m, err := newPacketMAC(reg, ms, k.macKey)
	if err != nil {
		provider.Release(s)
		return nil, err
	}
	return &etmCipher{stream: s, packetMAC: m, ctr: newCTRPosition(k.iv)}, nil
}

func (c *etmCipher) seal(seq uint32, pkt []byte) []byte {
	c.stream.XORKeyStream(pkt[4:], pkt[4:])
	c.ctr.used(len(pkt) - 4)
	return append(pkt, c.tag(seq, pkt)...)
}

func (c *etmCipher) decryptLength(_ uint32, hdr []byte) uint32 {
	return binary.BigEndian.Uint32(hdr)
}

func (c *etmCipher) open(seq uint32, pkt []byte) ([]byte, error) {
	if len(pkt) < 4+c.tagN {
		return nil, errShortPacket
	}
	n := len(pkt) - c.tagN
	if subtle.ConstantTimeCompare(c.tag(seq, pkt[:n]), pkt[n:]) != 1 {
		return nil, ErrMAC
	}
	body := pkt[4:n]
	c.stream.XORKeyStream(body, body)
	c.ctr.used(len(body))
	return body, nil
}

func (c *etmCipher) tagLen() int         { return c.tagN }
func (c *etmCipher) blockLen() int       { return 16 }
func (c *etmCipher) lengthAligned() bool { return false }
func (c *etmCipher) Close() error        { return releaseAll(c.stream, c.mac) }

func (c *etmCipher) resumeIV() ([]byte, error) { return c.ctr.iv() }

// ctrPosition follows how far a CTR keystream has moved, so that the
// cipher can be rebuilt at the same place from a moved counter.
type ctrPosition struct {
	start []byte // the initial counter block
	bytes uint64 // keystream bytes used
}

func newCTRPosition(iv []byte) ctrPosition { return ctrPosition{start: append([]byte(nil), iv...)} }

func (p *ctrPosition) used(n int) { p.bytes += uint64(n) }

// iv is the counter block of the next unused keystream block; the
// position must be at a block boundary, as it is between packets.
func (p *ctrPosition) iv() ([]byte, error) {
	if p.bytes%16 != 0 {
		return nil, fmt.Errorf("transport: CTR keystream position %d is not at a block boundary", p.bytes)
	}
	return addCounter(p.start, p.bytes/16), nil
}

// addCounter adds n to the big-endian counter block iv.
func addCounter(iv []byte, n uint64) []byte {
	out := append([]byte(nil), iv...)
	for i := len(out) - 1; i >= 0 && n > 0; i-- {
		sum := uint64(out[i]) + n&0xff
		out[i] = byte(sum)
		n = n>>8 + sum>>8
	}
	return out
}
