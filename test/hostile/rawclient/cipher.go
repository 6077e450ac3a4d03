package rawclient

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/poly1305"
)

// Cipher names the client supports.
const (
	AES128GCM = "aes128-gcm@openssh.com"
	ChaCha    = "chacha20-poly1305@openssh.com"
	AES128CTR = "aes128-ctr"
	HMACETM   = "hmac-sha2-256-etm@openssh.com"
	// HMACEaM is the encrypt-and-MAC hmac-sha2-256 (RFC 4253 §6.4),
	// used with AES128CTR.
	HMACEaM = "hmac-sha2-256"
)

// ErrMAC is returned for a packet from the server that fails authentication.
var ErrMAC = errors.New("rawclient: message authentication failed")

// packetCipher seals and opens whole packets. seal gets the cleartext
// packet (length, padding length, payload, padding) and returns the wire
// bytes; the length field is the first four bytes.
type packetCipher interface {
	seal(seq uint32, pkt []byte) []byte
	// length decrypts the length field of an incoming packet.
	length(seq uint32, hdr []byte) uint32
	// open verifies and decrypts pkt (length field, body, tag) in place
	// and returns the body (padding length, payload, padding).
	open(seq uint32, pkt []byte) ([]byte, error)
	tagLen() int
	blockLen() int
	// lengthAligned reports whether the length field counts toward the
	// block alignment of the packet.
	lengthAligned() bool
}

// keyMaterial is the derived material of one direction.
type keyMaterial struct{ iv, key, mac []byte }

// sizes returns the IV, key and MAC key sizes of a cipher.
func sizes(name string) (iv, key, mac int, err error) {
	switch name {
	case AES128GCM:
		return 12, 16, 0, nil
	case ChaCha:
		return 0, 64, 0, nil
	case AES128CTR:
		return 16, 16, 32, nil
	}
	return 0, 0, 0, fmt.Errorf("rawclient: unsupported cipher %q", name)
}

func newCipher(name, mac string, k keyMaterial) (packetCipher, error) {
	switch {
	case name == AES128GCM:
		return newGCM(k)
	case name == ChaCha:
		return newChaCha(k)
	case name == AES128CTR && mac == HMACEaM:
		c, err := newCTR(k)
		if err != nil {
			return nil, err
		}
		return &ctrEaM{ctrETM: *c}, nil
	case name == AES128CTR:
		return newCTR(k)
	}
	return nil, fmt.Errorf("rawclient: unsupported cipher %q", name)
}

// noneCipher is the cleartext of the first key exchange.
type noneCipher struct{}

func (noneCipher) seal(_ uint32, pkt []byte) []byte { return pkt }
func (noneCipher) length(_ uint32, h []byte) uint32 { return binary.BigEndian.Uint32(h) }
func (noneCipher) open(_ uint32, p []byte) ([]byte, error) {
	return p[4:], nil
}
func (noneCipher) tagLen() int         { return 0 }
func (noneCipher) blockLen() int       { return 8 }
func (noneCipher) lengthAligned() bool { return true }

// gcm is aes128-gcm@openssh.com: the length is in the clear and
// authenticated; the nonce is a 4-byte fixed part and a 64-bit counter.
type gcm struct {
	aead  cipher.AEAD
	nonce [12]byte
}

func newGCM(k keyMaterial) (*gcm, error) {
	b, err := aes.NewCipher(k.key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	g := &gcm{aead: a}
	copy(g.nonce[:], k.iv)
	return g, nil
}

func (g *gcm) next() {
	n := binary.BigEndian.Uint64(g.nonce[4:])
	binary.BigEndian.PutUint64(g.nonce[4:], n+1)
}

func (g *gcm) seal(_ uint32, pkt []byte) []byte {
	out := g.aead.Seal(append([]byte(nil), pkt[:4]...), g.nonce[:], pkt[4:], pkt[:4])
	g.next()
	return out
}

func (g *gcm) length(_ uint32, h []byte) uint32 { return binary.BigEndian.Uint32(h) }

func (g *gcm) open(_ uint32, pkt []byte) ([]byte, error) {
	body, err := g.aead.Open(pkt[4:4], g.nonce[:], pkt[4:], pkt[:4])
	if err != nil {
		return nil, ErrMAC
	}
	g.next()
	return body, nil
}

func (g *gcm) tagLen() int         { return 16 }
func (g *gcm) blockLen() int       { return 16 }
func (g *gcm) lengthAligned() bool { return false }

// chachaPoly is chacha20-poly1305@openssh.com: K_2 (first 32 bytes)
// encrypts the body, K_1 (last 32) the length; the nonce is the sequence
// number.
type chachaPoly struct{ main, header [32]byte }

func newChaCha(k keyMaterial) (*chachaPoly, error) {
	c := &chachaPoly{}
	copy(c.main[:], k.key[:32])
	copy(c.header[:], k.key[32:])
	return c, nil
}

func chachaNonce(seq uint32) []byte {
	var n [12]byte
	binary.BigEndian.PutUint32(n[8:], seq)
	return n[:]
}

func (c *chachaPoly) stream(key *[32]byte, seq uint32, counter uint32) *chacha20.Cipher {
	s, err := chacha20.NewUnauthenticatedCipher(key[:], chachaNonce(seq))
	if err != nil {
		panic(err)
	}
	s.SetCounter(counter)
	return s
}

func (c *chachaPoly) polyKey(seq uint32) *[32]byte {
	var k [32]byte
	c.stream(&c.main, seq, 0).XORKeyStream(k[:], k[:])
	return &k
}

func (c *chachaPoly) seal(seq uint32, pkt []byte) []byte {
	out := append([]byte(nil), pkt...)
	c.stream(&c.header, seq, 0).XORKeyStream(out[:4], out[:4])
	c.stream(&c.main, seq, 1).XORKeyStream(out[4:], out[4:])
	var tag [16]byte
	poly1305.Sum(&tag, out, c.polyKey(seq))
	return append(out, tag[:]...)
}

func (c *chachaPoly) length(seq uint32, h []byte) uint32 {
	var l [4]byte
	c.stream(&c.header, seq, 0).XORKeyStream(l[:], h[:4])
	return binary.BigEndian.Uint32(l[:])
}

func (c *chachaPoly) open(seq uint32, pkt []byte) ([]byte, error) {
	n := len(pkt) - 16
	var tag [16]byte
	copy(tag[:], pkt[n:])
	if !poly1305.Verify(&tag, pkt[:n], c.polyKey(seq)) {
		return nil, ErrMAC
	}
	body := pkt[4:n]
	c.stream(&c.main, seq, 1).XORKeyStream(body, body)
	return body, nil
}

func (c *chachaPoly) tagLen() int         { return 16 }
func (c *chachaPoly) blockLen() int       { return 8 }
func (c *chachaPoly) lengthAligned() bool { return false }

// ctrETM is aes128-ctr with hmac-sha2-256-etm@openssh.com: the length is
// in the clear, the MAC covers sequence number, length and ciphertext.
type ctrETM struct {
	s   cipher.Stream
	mac hash.Hash
}

func newCTR(k keyMaterial) (*ctrETM, error) {
	b, err := aes.NewCipher(k.key)
	if err != nil {
		return nil, err
	}
	return &ctrETM{s: cipher.NewCTR(b, k.iv), mac: hmac.New(sha256.New, k.mac)}, nil
}

func (c *ctrETM) sum(seq uint32, msg []byte) []byte {
	c.mac.Reset()
	var s [4]byte
	binary.BigEndian.PutUint32(s[:], seq)
	c.mac.Write(s[:])
	c.mac.Write(msg)
	return c.mac.Sum(nil)
}

func (c *ctrETM) seal(seq uint32, pkt []byte) []byte {
	out := append([]byte(nil), pkt...)
	c.s.XORKeyStream(out[4:], out[4:])
	return append(out, c.sum(seq, out)...)
}

func (c *ctrETM) length(_ uint32, h []byte) uint32 { return binary.BigEndian.Uint32(h) }

func (c *ctrETM) open(seq uint32, pkt []byte) ([]byte, error) {
	n := len(pkt) - 32
	if subtle.ConstantTimeCompare(c.sum(seq, pkt[:n]), pkt[n:]) != 1 {
		return nil, ErrMAC
	}
	body := pkt[4:n]
	c.s.XORKeyStream(body, body)
	return body, nil
}

func (c *ctrETM) tagLen() int         { return 32 }
func (c *ctrETM) blockLen() int       { return 16 }
func (c *ctrETM) lengthAligned() bool { return false }

// ctrEaM is aes128-ctr with the encrypt-and-MAC hmac-sha2-256: the MAC
// covers the sequence number and the cleartext packet, and the whole
// packet, length included, is encrypted.
type ctrEaM struct{ ctrETM }

func (c *ctrEaM) seal(seq uint32, pkt []byte) []byte {
	tag := c.sum(seq, pkt)
	out := append([]byte(nil), pkt...)
	c.s.XORKeyStream(out, out)
	return append(out, tag...)
}

// length decrypts the length field in place; open continues the
// keystream after it.
func (c *ctrEaM) length(_ uint32, h []byte) uint32 {
	c.s.XORKeyStream(h[:4], h[:4])
	return binary.BigEndian.Uint32(h)
}

func (c *ctrEaM) open(seq uint32, pkt []byte) ([]byte, error) {
	n := len(pkt) - 32
	c.s.XORKeyStream(pkt[4:n], pkt[4:n])
	if subtle.ConstantTimeCompare(c.sum(seq, pkt[:n]), pkt[n:]) != 1 {
		return nil, ErrMAC
	}
	return pkt[4:n], nil
}

func (c *ctrEaM) lengthAligned() bool { return true }
