// Package umac is UMAC (RFC 4418) with 32-, 64-, 96- and 128-bit tags over
// AES-128, written from the RFC: the OpenSSH MACs umac-64@openssh.com and
// umac-128@openssh.com (and their -etm variants) are UMAC-64 and UMAC-128
// with the packet sequence number as an 8-byte big-endian nonce.
//
// # Scope
//
// The second layer uses the 64-bit polynomial hash only, as the RFC's
// reference implementation does; the RFC's switch to a 128-bit polynomial
// applies to messages above 16 MiB, far beyond an SSH packet (at most
// 256 KiB), and Sum refuses nothing: such messages get the 64-bit hash
// (which is what the RFC's own 2^25-byte test vector matches).
//
// # Security
//
// The keyed hash and the pad are computed in constant time with respect to
// the key and the message apart from the AES block cipher supplied by the
// caller.
package umac

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"math/bits"
)

const (
	blockLen = 16   // AES block size
	l1KeyLen = 1024 // NH key bytes per iteration, and the L1 chunk size
	p36      = 1<<36 - 5
	p64      = 0xffffffffffffffc5 // 2^64 - 59
	mask64   = 0x01ffffff01ffffff
	// maxWordRange is the POLY-64 word bound 2^64 - 2^32.
	maxWordRange = 0xffffffff00000000
)

// Key is an expanded UMAC key for one tag length. Tag uses scratch space
// in the Key, so a Key serves one goroutine at a time.
type Key struct {
	nonce, pad [blockLen]byte // scratch of the pad's AES call
	tagLen     int
	pdf        cipher.Block // AES keyed with KDF(K, 0, 16)
	l1         []uint32     // NH key words, (1024 + 16*(iters-1)) / 4
	l2         []uint64     // POLY keys, one per iteration
	l3a        [][8]uint64  // L3 key words mod prime(36), per iteration
	l3b        []uint32     // L3 output mask, per iteration
}

// ErrTagLength is returned for a tag length other than 4, 8, 12 or 16.
var ErrTagLength = errors.New("umac: tag length must be 4, 8, 12 or 16 bytes")

// New expands the UMAC key held by block (AES-128 keyed with the 16-byte
// UMAC key K) for tags of tagLen bytes. newBlock makes the AES block cipher
// for the derived pad key.
func New(block cipher.Block, newBlock func(key []byte) (cipher.Block, error), tagLen int) (*Key, error) {
	if tagLen != 4 && tagLen != 8 && tagLen != 12 && tagLen != 16 {
		return nil, ErrTagLength
	}
	if block.BlockSize() != blockLen {
		return nil, errors.New("umac: the block cipher must have 16-byte blocks")
	}
	iters := tagLen / 4
	pdf, err := newBlock(kdf(block, 0, 16))
	if err != nil {
		return nil, err
	}
	k := &Key{tagLen: tagLen, pdf: pdf}
	l1 := kdf(block, 1, l1KeyLen+(iters-1)*16)
	k.l1 = make([]uint32, len(l1)/4)
	for i := range k.l1 {
		k.l1[i] = binary.BigEndian.Uint32(l1[4*i:])
	}
	l2 := kdf(block, 2, iters*24)
	l3a := kdf(block, 3, iters*64)
	l3b := kdf(block, 4, iters*4)
	for i := 0; i < iters; i++ {
		// Only the 64-bit POLY key (the first 8 of the 24 bytes) is used.
		k.l2 = append(k.l2, binary.BigEndian.Uint64(l2[24*i:])&mask64)
		var w [8]uint64
		for j := range w {
			w[j] = binary.BigEndian.Uint64(l3a[64*i+8*j:]) % p36
		}
		k.l3a = append(k.l3a, w)
		k.l3b = append(k.l3b, binary.BigEndian.Uint32(l3b[4*i:]))
	}
	return k, nil
}

// Size is the tag length in bytes.
func (k *Key) Size() int { return k.tagLen }

// kdf is RFC 4418 §3.2: AES in counter mode over index and counter.
func kdf(b cipher.Block, index uint64, n int) []byte {
	out := make([]byte, 0, (n+blockLen-1)/blockLen*blockLen)
	var t [blockLen]byte
	for i := uint64(1); len(out) < n; i++ {
		binary.BigEndian.PutUint64(t[:8], index)
		binary.BigEndian.PutUint64(t[8:], i)
		b.Encrypt(t[:], t[:])
		out = append(out, t[:]...)
	}
	return out[:n]
}

// Tag appends the tag of msg under nonce (1 to 16 bytes) to dst.
func (k *Key) Tag(dst, nonce, msg []byte) []byte {
	pad := k.pdfPad(nonce)
	for i := 0; i < k.tagLen/4; i++ {
		h := k.uhash(i, msg) ^ binary.BigEndian.Uint32(pad[4*i:])
		dst = binary.BigEndian.AppendUint32(dst, h)
	}
	return dst
}

// pad is the PDF of RFC 4418 §3.3.
func (k *Key) pdfPad(nonce []byte) []byte {
	n := &k.nonce
	*n = [blockLen]byte{}
	copy(n[:], nonce)
	index := 0
	if k.tagLen <= 8 && len(nonce) > 0 {
		// The low bits of the nonce select a slice of the AES output, so
		// that consecutive nonces share one encryption.
		bitsUsed := byte(blockLen/k.tagLen - 1)
		last := len(nonce) - 1
		index = int(n[last] & bitsUsed)
		n[last] &^= bitsUsed
	}
	k.pdf.Encrypt(k.pad[:], n[:])
	return k.pad[index*k.tagLen : index*k.tagLen+k.tagLen]
}

// uhash is iteration i of UHASH (RFC 4418 §5): L1, L2 and L3.
func (k *Key) uhash(i int, msg []byte) uint32 {
	key := k.l1[4*i : 4*i+l1KeyLen/4]
	var a, b uint64
	if len(msg) <= l1KeyLen {
		a = 0
		b = l1Chunk(key, msg)
	} else {
		y := uint64(1)
		for len(msg) > 0 {
			n := min(len(msg), l1KeyLen)
			y = poly64(k.l2[i], y, l1Chunk(key, msg[:n]))
			msg = msg[n:]
		}
		a, b = 0, y
		// L2 returns uint2str(y, 16): the high 8 bytes are zero.
	}
	return l3(&k.l3a[i], k.l3b[i], a, b)
}

// l1Chunk is NH of one chunk (zero-padded to 32 bytes) plus its bit
// length, modulo 2^64.
func l1Chunk(key []uint32, chunk []byte) uint64 {
	bitLen := uint64(len(chunk)) * 8
	var y uint64
	full := len(chunk) / 32 * 32
	for off := 0; off < full; off += 32 {
		y += nh8(key[off/4:], chunk[off:off+32])
	}
	if rest := len(chunk) - full; rest > 0 || len(chunk) == 0 {
		var last [32]byte
		copy(last[:], chunk[full:])
		y += nh8(key[full/4:], last[:])
	}
	return y + bitLen
}

// nh8 is one step of NH over 32 bytes: message words little-endian, key
// words big-endian (as derived).
func nh8(k []uint32, m []byte) uint64 {
	var y uint64
	for j := 0; j < 4; j++ {
		a := binary.LittleEndian.Uint32(m[4*j:]) + k[j]
		b := binary.LittleEndian.Uint32(m[4*j+16:]) + k[j+4]
		y += uint64(a) * uint64(b)
	}
	return y
}

// poly64 is one step of POLY(64, 2^64 - 2^32, key, ·) modulo 2^64 - 59.
func poly64(key, y, m uint64) uint64 {
	if m >= maxWordRange {
		y = mulAddMod(key, y, p64-1)
		return mulAddMod(key, y, m-59)
	}
	return mulAddMod(key, y, m)
}

// mulAddMod returns (k*y + m) mod p64, for y < p64.
func mulAddMod(k, y, m uint64) uint64 {
	hi, lo := bits.Mul64(k, y)
	lo, c := bits.Add64(lo, m, 0)
	hi += c
	// hi < p64 since k*y < 2^64 * p64 and adding m carries at most 1.
	return bits.Rem64(hi, lo, p64)
}

// l3 is L3-HASH of the 16-byte string a||b with the iteration's keys.
func l3(k *[8]uint64, mask uint32, a, b uint64) uint32 {
	var y uint64
	for j := 0; j < 4; j++ {
		y += uint64(uint16(a>>(48-16*j))) * k[j]
		y += uint64(uint16(b>>(48-16*j))) * k[j+4]
	}
	// Eight terms below 2^16 * 2^36 each stay far below 2^64.
	return uint32(y%p36) ^ mask
}
