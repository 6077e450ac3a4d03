package transport

import (
	"encoding/binary"
	"fmt"

	"github.com/offload/offload/provider"
)

// chachaCipher is chacha20-poly1305@openssh.com (OpenSSH
// PROTOCOL.chacha20poly1305). The 64-byte key holds K_2, the main key, in
// its first half and K_1, the header key, in its second. The nonce is the
// sequence number; with the 96-bit ChaCha20 nonce that is 4 zero bytes and
// the 64-bit big-endian sequence number. K_1 at block 0 encrypts
// packet_length; the first 32 bytes of K_2's block 0 are the Poly1305 key;
// the body is encrypted with K_2 from block 1. The tag covers the
// encrypted length and body.
type chachaCipher struct {
	main, header provider.KeyStream
	mac          provider.OneTimeMAC

	nonce   [12]byte
	polyKey [32]byte
	zero    [32]byte
	length  [4]byte
	tag     [16]byte
}

func newChachaCipher(reg *provider.Registry, cs *cipherSpec, k directionKeys) (*chachaCipher, error) {
	if len(k.key) != cs.keySize {
		return nil, fmt.Errorf("transport: %s: key is %d bytes, want %d", cs.name, len(k.key), cs.keySize)
	}
	c := &chachaCipher{}
	var err error
	if c.main, err = reg.KeyStream(cs.keyStream, k.key[:32]); err != nil {
		return nil, fmt.Errorf("transport: %s: %w", cs.name, err)
	}
	if c.header, err = reg.KeyStream(cs.keyStream, k.key[32:]); err != nil {
		c.Close()
		return nil, fmt.Errorf("transport: %s: %w", cs.name, err)
	}
	if c.mac, err = reg.OneTimeMAC(cs.oneTimeMAC); err != nil {
		c.Close()
		return nil, fmt.Errorf("transport: %s: %w", cs.name, err)
	}
	return c, nil
}

// start sets the nonce for seq and derives the Poly1305 key.
func (c *chachaCipher) start(seq uint32) {
	binary.BigEndian.PutUint64(c.nonce[4:], uint64(seq))
	c.main.XORKeyStreamAt(c.polyKey[:], c.zero[:], c.nonce[:], 0)
}

func (c *chachaCipher) seal(seq uint32, pkt []byte) []byte {
	c.start(seq)
	c.header.XORKeyStreamAt(pkt[:4], pkt[:4], c.nonce[:], 0)
	c.main.XORKeyStreamAt(pkt[4:], pkt[4:], c.nonce[:], 1)
	c.mac.Sum(c.tag[:], pkt, c.polyKey[:])
	return append(pkt, c.tag[:]...)
}

func (c *chachaCipher) decryptLength(seq uint32, hdr []byte) uint32 {
	binary.BigEndian.PutUint64(c.nonce[4:], uint64(seq))
	c.header.XORKeyStreamAt(c.length[:], hdr[:4], c.nonce[:], 0)
	return binary.BigEndian.Uint32(c.length[:])
}

func (c *chachaCipher) open(seq uint32, pkt []byte) ([]byte, error) {
	if len(pkt) < 4+16 {
		return nil, errShortPacket
	}
	c.start(seq)
	n := len(pkt) - 16
	if !c.mac.Verify(pkt[n:], pkt[:n], c.polyKey[:]) {
		return nil, ErrMAC
	}
	body := pkt[4:n]
	c.main.XORKeyStreamAt(body, body, c.nonce[:], 1)
	return body, nil
}

func (c *chachaCipher) tagLen() int         { return 16 }
func (c *chachaCipher) blockLen() int       { return 8 }
func (c *chachaCipher) lengthAligned() bool { return false }

func (c *chachaCipher) resumeIV() ([]byte, error) { return nil, nil }
func (c *chachaCipher) Close() error {
	clear(c.polyKey[:])
	return releaseAll(c.main, c.header, c.mac)
}
