package transport

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"

	"github.com/offload/offload/provider"
)

// eamCipher is a stream cipher (aes-ctr) with the original
// encrypt-and-MAC MAC of RFC 4253 §6.4 (hmac-sha2-256, hmac-sha2-512, and
// the legacy hmac-sha1, hmac-md5 and umac):
// the whole packet, length included, is encrypted, and the MAC covers the
// sequence number and the cleartext packet. The length must be decrypted
// to know how much to read, so decryptLength works in place; the MAC is
// still checked before the payload is handed on.
type eamCipher struct {
	stream cipher.Stream
	packetMAC
	ctr ctrPosition
}

func newEaMCipher(reg *provider.Registry, cs *cipherSpec, ms *macSpec, k directionKeys) (*eamCipher, error) {
	e, err := newEtMCipher(reg, cs, ms, k)
	if err != nil {
		return nil, err
	}
	return &eamCipher{stream: e.stream, packetMAC: e.packetMAC, ctr: e.ctr}, nil
}

func (c *eamCipher) seal(seq uint32, pkt []byte) []byte {
	tag := c.tag(seq, pkt)
	c.stream.XORKeyStream(pkt, pkt)
	c.ctr.used(len(pkt))
	return append(pkt, tag...)
}

// decryptLength decrypts the length in place: the keystream moves on by
// four bytes, and open continues from there.
func (c *eamCipher) decryptLength(_ uint32, hdr []byte) uint32 {
	c.stream.XORKeyStream(hdr[:4], hdr[:4])
	c.ctr.used(4)
	return binary.BigEndian.Uint32(hdr)
}

func (c *eamCipher) open(seq uint32, pkt []byte) ([]byte, error) {
	if len(pkt) < 4+c.tagN {
		return nil, errShortPacket
	}
	n := len(pkt) - c.tagN
	c.stream.XORKeyStream(pkt[4:n], pkt[4:n])
	c.ctr.used(n - 4)
	if subtle.ConstantTimeCompare(c.tag(seq, pkt[:n]), pkt[n:]) != 1 {
		return nil, ErrMAC
	}
	return pkt[4:n], nil
}

func (c *eamCipher) tagLen() int         { return c.tagN }
func (c *eamCipher) blockLen() int       { return 16 }
func (c *eamCipher) lengthAligned() bool { return true }
func (c *eamCipher) Close() error        { return releaseAll(c.stream, c.mac) }

func (c *eamCipher) resumeIV() ([]byte, error) { return c.ctr.iv() }

var _ packetCipher = (*eamCipher)(nil)
