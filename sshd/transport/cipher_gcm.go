package transport

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/offload/offload/provider"
)

// gcmCipher is aes128-gcm@openssh.com / aes256-gcm@openssh.com (RFC 5647
// as amended by OpenSSH PROTOCOL §1.6): the 12-byte nonce is a 4-byte fixed
// field and an 8-byte invocation counter incremented after every packet;
// packet_length is sent in the clear as additional data.
type gcmCipher struct {
	aead  cipher.AEAD
	nonce [12]byte
}

func newGCMCipher(reg *provider.Registry, cs *cipherSpec, k directionKeys) (*gcmCipher, error) {
	if len(k.iv) != cs.ivSize {
		return nil, fmt.Errorf("transport: %s: IV is %d bytes, want %d", cs.name, len(k.iv), cs.ivSize)
	}
	a, err := reg.AEAD(cs.aead, k.key)
	if err != nil {
		return nil, fmt.Errorf("transport: %s: %w", cs.name, err)
	}
	if a.NonceSize() != 12 || a.Overhead() != 16 {
		provider.Release(a)
		return nil, fmt.Errorf("transport: %s: provider AEAD has nonce %d, tag %d", cs.name, a.NonceSize(), a.Overhead())
	}
	c := &gcmCipher{aead: a}
	copy(c.nonce[:], k.iv)
	return c, nil
}

func (c *gcmCipher) next() {
	ctr := binary.BigEndian.Uint64(c.nonce[4:])
	binary.BigEndian.PutUint64(c.nonce[4:], ctr+1)
}

func (c *gcmCipher) seal(_ uint32, pkt []byte) []byte {
	body := pkt[4:]
	out := c.aead.Seal(body[:0], c.nonce[:], body, pkt[:4])
	c.next()
	return pkt[:4+len(out)]
}

// sealErr is seal with a provider fault returned (provider.Seal), so a
// token AEAD with its fallback off fails the connection without a panic.
func (c *gcmCipher) sealErr(seq uint32, pkt []byte) ([]byte, error) {
	out, err := c.sealWith(&c.nonce, seq, pkt)
	if err != nil {
		return nil, err
	}
	c.next()
	return out, nil
}

func (c *gcmCipher) decryptLength(_ uint32, hdr []byte) uint32 {
	return binary.BigEndian.Uint32(hdr)
}

func (c *gcmCipher) open(seq uint32, pkt []byte) ([]byte, error) {
	body, err := c.openWith(&c.nonce, seq, pkt, pkt[4:4])
	if err != nil {
		return nil, err
	}
	c.next()
	return body, nil
}

// sealWith seals pkt in place under nonce, leaving the cipher's own
// nonce alone (the pipeline took it for this packet).
func (c *gcmCipher) sealWith(nonce *[12]byte, _ uint32, pkt []byte) ([]byte, error) {
	body := pkt[4:]
	out, err := provider.Seal(c.aead, body[:0], nonce[:], body, pkt[:4])
	if err != nil {
		return nil, err
	}
	return pkt[:4+len(out)], nil
}

// openWith authenticates pkt (length, body, tag) under nonce and
// decrypts the body to dst (pkt[4:4] in place; a buffer of its own to
// keep pkt as it came).
func (c *gcmCipher) openWith(nonce *[12]byte, seq uint32, pkt, dst []byte) ([]byte, error) {
	if len(pkt) < 4+16 {
		return nil, errShortPacket
	}
	body, err := provider.Open(c.aead, dst, nonce[:], pkt[4:], pkt[:4])
	if errors.Is(err, provider.ErrAuthentication) {
		return nil, ErrMAC
	}
	if err != nil {
		return nil, providerDisconnect(&ProviderError{Op: "open", Seq: seq, Err: err})
	}
	return body, nil
}

// lanes is how many packets the AEAD works on at once (provider.Lanes).
func (c *gcmCipher) lanes() int { return provider.Lanes(c.aead) }

// takeNonce returns the nonce of the next packet and moves past it.
func (c *gcmCipher) takeNonce() [12]byte {
	n := c.nonce
	c.next()
	return n
}

// setNonce makes n the nonce of the next packet: packets read ahead
// under it are read again.
func (c *gcmCipher) setNonce(n [12]byte) { c.nonce = n }

func (c *gcmCipher) tagLen() int         { return 16 }
func (c *gcmCipher) blockLen() int       { return 16 }
func (c *gcmCipher) lengthAligned() bool { return false }
func (c *gcmCipher) Close() error        { return releaseAll(c.aead) }

func (c *gcmCipher) resumeIV() ([]byte, error) { return append([]byte(nil), c.nonce[:]...), nil }
