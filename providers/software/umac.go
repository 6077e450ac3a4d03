package software

import (
	"github.com/offload/offload/providers/software/internal/umac"
)

// umacHash is UMAC as a hash.Hash: the first nonceLen bytes written are
// the nonce (SSH writes the 8-byte sequence number there, as OpenSSH's
// umac-64 and umac-128 use it) and the rest is the message. It keeps the
// message until Sum, which leaves the state as it was; a Sum before the
// whole nonce is written uses it zero-padded with an empty message.
type umacHash struct {
	key       *umac.Key
	nonceLen  int
	blockSize int
	buf       []byte
}

func (h *umacHash) Write(p []byte) (int, error) {
	h.buf = append(h.buf, p...)
	return len(p), nil
}

func (h *umacHash) Sum(b []byte) []byte {
	n := min(len(h.buf), h.nonceLen)
	var nonce [16]byte
	copy(nonce[:], h.buf[:n])
	return h.key.Tag(b, nonce[:h.nonceLen], h.buf[n:])
}

func (h *umacHash) Reset()         { h.buf = h.buf[:0] }
func (h *umacHash) Size() int      { return h.key.Size() }
func (h *umacHash) BlockSize() int { return h.blockSize }
