package transport

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"fmt"

	"github.com/offload/offload/provider"
)

// cbcCipher is a block cipher in CBC mode (aes*-cbc, 3des-cbc; RFC 4253
// §6.3) with a separately negotiated MAC, encrypt-and-MAC or
// encrypt-then-MAC. The block cipher comes from the registry; the chaining
// is done here. Off by default: CBC with encrypt-and-MAC leaks through
// its padding and length checks (the 2008 plaintext-recovery attack on
// SSH), which is why OpenSSH dropped these from its defaults.
//
// In encrypt-and-MAC mode the length is in the first encrypted block, so
// the reader hands decryptLength that whole block (lengthBlock) and open
// continues from the second.
type cbcCipher struct {
	enc, dec cipher.BlockMode
	block    cipher.Block
	packetMAC
	bs  int
	etm bool
	// last is the last ciphertext block: the IV that resumes the chain.
	last [16]byte
}

func newCBCCipher(reg *provider.Registry, cs *cipherSpec, ms *macSpec, k directionKeys) (*cbcCipher, error) {
	b, err := reg.Block(cs.block, k.key)
	if err != nil {
		return nil, fmt.Errorf("transport: %s: %w", cs.name, err)
	}
	bs := b.BlockSize()
	if bs != cs.blockSize || len(k.iv) != bs || bs > 16 {
		provider.Release(b)
		return nil, fmt.Errorf("transport: %s: block size %d and IV of %d bytes, want %d", cs.name, bs, len(k.iv), cs.blockSize)
	}
	m, err := newPacketMAC(reg, ms, k.macKey)
	if err != nil {
		provider.Release(b)
		return nil, err
	}
	c := &cbcCipher{enc: cipher.NewCBCEncrypter(b, k.iv), dec: cipher.NewCBCDecrypter(b, k.iv), block: b,
		packetMAC: m, bs: bs, etm: ms.etm}
	copy(c.last[:], k.iv)
	return c, nil
}

func (c *cbcCipher) encrypt(b []byte) {
	c.enc.CryptBlocks(b, b)
	copy(c.last[:], b[len(b)-c.bs:])
}

func (c *cbcCipher) decrypt(b []byte) {
	if len(b) == 0 {
		return
	}
	copy(c.last[:], b[len(b)-c.bs:])
	c.dec.CryptBlocks(b, b)
}

func (c *cbcCipher) seal(seq uint32, pkt []byte) []byte {
	if c.etm {
		c.encrypt(pkt[4:])
		return append(pkt, c.tag(seq, pkt)...)
	}
	tag := c.tag(seq, pkt)
	c.encrypt(pkt)
	return append(pkt, tag...)
}

// lengthBlock is how many bytes decryptLength needs: the whole first
// block in encrypt-and-MAC mode, the clear length in EtM mode.
func (c *cbcCipher) lengthBlock() int {
	if c.etm {
		return 4
	}
	return c.bs
}

func (c *cbcCipher) decryptLength(_ uint32, hdr []byte) uint32 {
	if !c.etm {
		c.decrypt(hdr[:c.bs])
	}
	return binary.BigEndian.Uint32(hdr)
}

func (c *cbcCipher) open(seq uint32, pkt []byte) ([]byte, error) {
	if len(pkt) < 4+c.tagN || (!c.etm && len(pkt) < c.bs+c.tagN) {
		return nil, errShortPacket
	}
	n := len(pkt) - c.tagN
	if c.etm {
		if subtle.ConstantTimeCompare(c.tag(seq, pkt[:n]), pkt[n:]) != 1 {
			return nil, ErrMAC
		}
		if (n-4)%c.bs != 0 {
			return nil, errShortPacket
		}
		c.decrypt(pkt[4:n])
		return pkt[4:n], nil
	}
	if (n-c.bs)%c.bs != 0 {
		return nil, errShortPacket
	}
	c.decrypt(pkt[c.bs:n]) // the first block was decrypted by decryptLength
	if subtle.ConstantTimeCompare(c.tag(seq, pkt[:n]), pkt[n:]) != 1 {
		return nil, ErrMAC
	}
	return pkt[4:n], nil
}

func (c *cbcCipher) tagLen() int               { return c.tagN }
func (c *cbcCipher) blockLen() int             { return c.bs }
func (c *cbcCipher) lengthAligned() bool       { return !c.etm }
func (c *cbcCipher) Close() error              { return releaseAll(c.block, c.mac) }
func (c *cbcCipher) resumeIV() ([]byte, error) { return clone(c.last[:c.bs]), nil }
func (c *cbcCipher) provenance() string        { return provenanceOf(c.block, c.mac) }

var _ packetCipher = (*cbcCipher)(nil)

// lengthBytes is how many bytes the reader gives decryptLength: 4, or the
// first cipher block for a CBC cipher in encrypt-and-MAC mode.
func lengthBytes(c packetCipher) int {
	if lb, ok := c.(interface{ lengthBlock() int }); ok {
		return lb.lengthBlock()
	}
	return 4
}
