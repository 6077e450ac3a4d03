package transport

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/offload/offload/provider"
)

// packetCipher protects the packets of one direction. A packet is the
// 4-byte packet_length followed by the body (padding_length, payload,
// padding); the tag, if any, follows the body.
type packetCipher interface {
	// seal encrypts pkt in place and appends the tag; cap(pkt) must leave
	// room for tagLen bytes.
	seal(seq uint32, pkt []byte) []byte
	// decryptLength returns packet_length from the first 4 bytes of a
	// packet (the first cipher block for CBC in encrypt-and-MAC mode; see
	// lengthBytes). Only encrypt-and-MAC modes change them (decrypting in
	// place).
	decryptLength(seq uint32, hdr []byte) uint32
	// open authenticates pkt (length, body, tag) and decrypts the body in
	// place, returning it. The MAC is checked before anything is decrypted.
	open(seq uint32, pkt []byte) ([]byte, error)
	tagLen() int
	// blockLen is the padding alignment.
	blockLen() int
	// lengthAligned reports whether packet_length counts toward the
	// alignment (cleartext and encrypt-and-MAC; AEAD and EtM modes leave
	// the length out).
	lengthAligned() bool
	// resumeIV returns the IV that rebuilds this cipher at its current
	// position (between packets) from the same keys: the next GCM nonce,
	// the CTR counter moved past the blocks used; nil where the position
	// is the sequence number alone (chacha20-poly1305, none).
	resumeIV() ([]byte, error)
	// provenance names the providers of the cipher's primitives.
	provenance() string
	// Close releases the primitives (a token session, say).
	Close() error
}

// errShortPacket is returned by open for a packet too short to hold a tag.
var errShortPacket = errors.New("transport: packet shorter than its tag")

// directionKeys are the derived keys of one direction.
type directionKeys struct {
	iv, key, macKey []byte
}

// newPacketCipher assembles cs (and ms, unless cs authenticates itself)
// from registry primitives.
func newPacketCipher(reg *provider.Registry, cs *cipherSpec, ms *macSpec, k directionKeys) (packetCipher, error) {
	switch {
	case cs.aead != "":
		return newGCMCipher(reg, cs, k)
	case cs.keyStream != "":
		return newChachaCipher(reg, cs, k)
	case cs.block != "" && ms != nil:
		return newCBCCipher(reg, cs, ms, k)
	case cs.stream != "" && ms != nil && ms.etm:
		return newEtMCipher(reg, cs, ms, k)
	case cs.stream != "" && ms != nil:
		return newEaMCipher(reg, cs, ms, k)
	}
	return nil, fmt.Errorf("transport: cannot assemble cipher %s", cs.name)
}

// noneCipher is the cleartext of the first key exchange.
type noneCipher struct{}

func (noneCipher) seal(_ uint32, pkt []byte) []byte { return pkt }
func (noneCipher) decryptLength(_ uint32, hdr []byte) uint32 {
	return binary.BigEndian.Uint32(hdr)
}
func (noneCipher) open(_ uint32, pkt []byte) ([]byte, error) { return pkt[4:], nil }
func (noneCipher) tagLen() int                               { return 0 }
func (noneCipher) blockLen() int                             { return 8 }
func (noneCipher) lengthAligned() bool                       { return true }
func (noneCipher) resumeIV() ([]byte, error)                 { return nil, nil }
func (noneCipher) Close() error                              { return nil }

// releaseAll releases every primitive and returns the first error.
func releaseAll(vs ...any) error {
	var errs []error
	for _, v := range vs {
		if v != nil {
			errs = append(errs, provider.Release(v))
		}
	}
	return errors.Join(errs...)
}
