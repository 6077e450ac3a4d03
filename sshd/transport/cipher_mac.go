package transport

import (
	"encoding/binary"
	"fmt"
	"hash"

	"github.com/offload/offload/provider"
)

// packetMAC is the MAC of a cipher that does not authenticate itself: an
// HMAC over the 4-byte sequence number and the packet, truncated to the
// SSH tag size (hmac-sha1-96, hmac-md5-96), or UMAC, whose registry
// hash.Hash takes the sequence number as its 8-byte nonce, written first.
type packetMAC struct {
	mac  hash.Hash
	tagN int
	seqN int // bytes of the sequence number written: 4, or 8 for UMAC's nonce
	seq  [8]byte
	sum  [64]byte
}

func newPacketMAC(reg *provider.Registry, ms *macSpec, key []byte) (packetMAC, error) {
	m, err := reg.MAC(ms.hmac, key)
	if err != nil {
		return packetMAC{}, fmt.Errorf("transport: %s: %w", ms.name, err)
	}
	seqN := 4
	if alg, err := provider.Lookup(ms.hmac); err == nil && alg.NonceSize == 8 {
		seqN = 8
	}
	if m.Size() < ms.tagSize || m.Size() > 64 {
		provider.Release(m)
		return packetMAC{}, fmt.Errorf("transport: %s: provider MAC size %d, want %d", ms.name, m.Size(), ms.tagSize)
	}
	return packetMAC{mac: m, tagN: ms.tagSize, seqN: seqN}, nil
}

// tag is the MAC of seq and msg, truncated to the SSH tag size; it
// aliases the packetMAC until the next call.
func (c *packetMAC) tag(seq uint32, msg []byte) []byte {
	binary.BigEndian.PutUint32(c.seq[4:], seq)
	c.mac.Reset()
	c.mac.Write(c.seq[8-c.seqN:])
	c.mac.Write(msg)
	return c.mac.Sum(c.sum[:0])[:c.tagN]
}
