// Package aesgo is a portable AES block cipher (FIPS-197) written in plain
// Go. It never uses CPU AES instructions, so offload's software provider can
// offer an honest software baseline for AES-GCM and AES-CTR on every
// machine, and tests that force "no AES hardware" see software speeds.
//
// # Usage
//
// NewCipher returns a cipher.Block for a 16-, 24- or 32-byte key. Build
// modes on top of it with crypto/cipher:
//
//	b, err := aesgo.NewCipher(key)
//	gcm, err := cipher.NewGCM(b)      // generic GCM over this block
//	ctr := cipher.NewCTR(b, iv)       // generic CTR over this block
//
// Encrypt and Decrypt follow the crypto/cipher rules exactly as crypto/aes
// does: src and dst must hold a full block, may be the same slice (exact
// overlap) and must not partially overlap; breaking a rule panics.
//
// # Design
//
// The cipher uses the classic 32-bit table formulation: each round is four
// lookups per column into 1 KiB tables that combine SubBytes, ShiftRows
// and MixColumns, followed by AddRoundKey. Decryption uses the equivalent
// inverse cipher of FIPS-197 §5.3.5. The tables are not copied from
// anywhere: they are computed at package initialisation from the
// definitions in FIPS-197 (inversion in GF(2⁸) modulo x⁸+x⁴+x³+x+1
// followed by the affine map), and the tests check them against the
// FIPS-197 appendix vectors and against crypto/aes.
//
// # Security
//
// This implementation is NOT constant-time. Table lookups indexed by
// secret bytes leave cache-timing traces that a local attacker sharing the
// CPU (another process, another VM on the host) may be able to observe.
// Use it as a baseline and fallback, never where crypto/aes would be
// available and side channels matter; offload's software provider must not
// flag it as constant-time.
//
// A constant-time design (bitsliced, or an S-box computed by GF(2⁸)
// arithmetic) was considered and not chosen: in pure Go it encrypts a
// single block roughly ten times slower, and cipher.NewGCM over any Block
// other than crypto/aes's encrypts one block at a time and computes GHASH
// with the standard library's generic GHASH, which is itself documented as
// variable-time, so AES-GCM built this way would not become constant-time
// anyway.
//
// # Speed
//
// On a 2-core AMD EPYC (Go 1.26, `go test -bench . ./providers/software/internal/aesgo`):
// Encrypt AES-128 about 330 MB/s, AES-256 about 245 MB/s; cipher.NewCTR
// over it about 295 MB/s; cipher.NewGCM over it about 135 MB/s at 1 KiB
// and 16 KiB, against 4-5 GB/s for crypto/aes with AES-NI on the same
// machine.
package aesgo

import (
	"crypto/cipher"
	"encoding/binary"
	"strconv"
	"unsafe"
)

// BlockSize is the AES block size in bytes.
const BlockSize = 16

// KeySizeError reports a key that is not 16, 24 or 32 bytes long.
type KeySizeError int

func (k KeySizeError) Error() string {
	return "aesgo: invalid key size " + strconv.Itoa(int(k))
}

// maxRoundKeys is the number of round-key words of AES-256: 4*(14+1).
const maxRoundKeys = 60

// aesCipher holds the expanded encryption and decryption key schedules.
type aesCipher struct {
	rounds int
	enc    [maxRoundKeys]uint32
	dec    [maxRoundKeys]uint32
}

var _ cipher.Block = (*aesCipher)(nil)

// NewCipher returns an AES cipher.Block for key, which must be 16, 24 or 32
// bytes long (AES-128, AES-192, AES-256). Any other length gives a
// KeySizeError.
func NewCipher(key []byte) (cipher.Block, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, KeySizeError(len(key))
	}
	c := &aesCipher{rounds: len(key)/4 + 6}
	c.expandKey(key)
	return c, nil
}

func (c *aesCipher) BlockSize() int { return BlockSize }

// Encrypt encrypts the first block of src into dst.
func (c *aesCipher) Encrypt(dst, src []byte) {
	checkBlocks(dst, src)
	encryptBlock(c.enc[:4*(c.rounds+1)], c.rounds, dst, src)
}

// Decrypt decrypts the first block of src into dst.
func (c *aesCipher) Decrypt(dst, src []byte) {
	checkBlocks(dst, src)
	decryptBlock(c.dec[:4*(c.rounds+1)], c.rounds, dst, src)
}

// checkBlocks enforces the cipher.Block contract the way crypto/aes does.
func checkBlocks(dst, src []byte) {
	if len(src) < BlockSize {
		panic("aesgo: input not full block")
	}
	if len(dst) < BlockSize {
		panic("aesgo: output not full block")
	}
	if inexactOverlap(dst[:BlockSize], src[:BlockSize]) {
		panic("aesgo: invalid buffer overlap")
	}
}

// inexactOverlap reports whether x and y share memory without starting at
// the same address. Both are non-empty here.
func inexactOverlap(x, y []byte) bool {
	px := uintptr(unsafe.Pointer(&x[0]))
	py := uintptr(unsafe.Pointer(&y[0]))
	if px == py {
		return false
	}
	return px <= py+uintptr(len(y)-1) && py <= px+uintptr(len(x)-1)
}

// expandKey computes the FIPS-197 §5.2 key schedule into c.enc and the
// equivalent-inverse-cipher schedule (§5.3.5) into c.dec.
func (c *aesCipher) expandKey(key []byte) {
	nk := len(key) / 4
	n := 4 * (c.rounds + 1)
	w := c.enc[:n]
	for i := 0; i < nk; i++ {
		w[i] = binary.BigEndian.Uint32(key[4*i:])
	}
	rcon := uint32(1)
	for i := nk; i < n; i++ {
		t := w[i-1]
		switch {
		case i%nk == 0:
			t = subWord(t<<8|t>>24) ^ rcon<<24
			rcon = uint32(xtime(byte(rcon)))
		case nk > 6 && i%nk == 4:
			t = subWord(t)
		}
		w[i] = w[i-nk] ^ t
	}
	c.invertSchedule(n)
}

// invertSchedule fills c.dec with the round keys in reverse order, passing
// the inner ones through InvMixColumns.
func (c *aesCipher) invertSchedule(n int) {
	for r := 0; r <= c.rounds; r++ {
		for j := 0; j < 4; j++ {
			k := c.enc[n-4*(r+1)+j]
			if r > 0 && r < c.rounds {
				k = invMixColumn(k)
			}
			c.dec[4*r+j] = k
		}
	}
}

func subWord(w uint32) uint32 {
	return uint32(sbox[w>>24])<<24 | uint32(sbox[w>>16&0xff])<<16 |
		uint32(sbox[w>>8&0xff])<<8 | uint32(sbox[w&0xff])
}

// invMixColumn applies InvMixColumns to one column. td0[sbox[x]] is the
// InvMixColumns image of byte x in row 0, and the other tables rotate it.
func invMixColumn(k uint32) uint32 {
	return td[0][sbox[k>>24]] ^ td[1][sbox[k>>16&0xff]] ^
		td[2][sbox[k>>8&0xff]] ^ td[3][sbox[k&0xff]]
}

// encryptBlock runs the cipher of FIPS-197 §5.1 with round keys rk.
func encryptBlock(rk []uint32, rounds int, dst, src []byte) {
	_ = rk[4*rounds+3]
	s0 := binary.BigEndian.Uint32(src[0:4]) ^ rk[0]
	s1 := binary.BigEndian.Uint32(src[4:8]) ^ rk[1]
	s2 := binary.BigEndian.Uint32(src[8:12]) ^ rk[2]
	s3 := binary.BigEndian.Uint32(src[12:16]) ^ rk[3]
	t0, t1, t2, t3 := &te[0], &te[1], &te[2], &te[3]
	k := 4
	for r := 1; r < rounds; r++ {
		n0 := t0[s0>>24] ^ t1[s1>>16&0xff] ^ t2[s2>>8&0xff] ^ t3[s3&0xff] ^ rk[k]
		n1 := t0[s1>>24] ^ t1[s2>>16&0xff] ^ t2[s3>>8&0xff] ^ t3[s0&0xff] ^ rk[k+1]
		n2 := t0[s2>>24] ^ t1[s3>>16&0xff] ^ t2[s0>>8&0xff] ^ t3[s1&0xff] ^ rk[k+2]
		n3 := t0[s3>>24] ^ t1[s0>>16&0xff] ^ t2[s1>>8&0xff] ^ t3[s2&0xff] ^ rk[k+3]
		s0, s1, s2, s3 = n0, n1, n2, n3
		k += 4
	}
	// Final round: SubBytes and ShiftRows without MixColumns.
	s := &sbox
	o0 := lastRound(s, s0, s1, s2, s3) ^ rk[k]
	o1 := lastRound(s, s1, s2, s3, s0) ^ rk[k+1]
	o2 := lastRound(s, s2, s3, s0, s1) ^ rk[k+2]
	o3 := lastRound(s, s3, s0, s1, s2) ^ rk[k+3]
	putBlock(dst, o0, o1, o2, o3)
}

// decryptBlock runs the equivalent inverse cipher of FIPS-197 §5.3.5 with
// the decryption schedule rk.
func decryptBlock(rk []uint32, rounds int, dst, src []byte) {
	_ = rk[4*rounds+3]
	s0 := binary.BigEndian.Uint32(src[0:4]) ^ rk[0]
	s1 := binary.BigEndian.Uint32(src[4:8]) ^ rk[1]
	s2 := binary.BigEndian.Uint32(src[8:12]) ^ rk[2]
	s3 := binary.BigEndian.Uint32(src[12:16]) ^ rk[3]
	t0, t1, t2, t3 := &td[0], &td[1], &td[2], &td[3]
	k := 4
	for r := 1; r < rounds; r++ {
		n0 := t0[s0>>24] ^ t1[s3>>16&0xff] ^ t2[s2>>8&0xff] ^ t3[s1&0xff] ^ rk[k]
		n1 := t0[s1>>24] ^ t1[s0>>16&0xff] ^ t2[s3>>8&0xff] ^ t3[s2&0xff] ^ rk[k+1]
		n2 := t0[s2>>24] ^ t1[s1>>16&0xff] ^ t2[s0>>8&0xff] ^ t3[s3&0xff] ^ rk[k+2]
		n3 := t0[s3>>24] ^ t1[s2>>16&0xff] ^ t2[s1>>8&0xff] ^ t3[s0&0xff] ^ rk[k+3]
		s0, s1, s2, s3 = n0, n1, n2, n3
		k += 4
	}
	// Final round: InvShiftRows and InvSubBytes without InvMixColumns.
	s := &invSbox
	o0 := lastRound(s, s0, s3, s2, s1) ^ rk[k]
	o1 := lastRound(s, s1, s0, s3, s2) ^ rk[k+1]
	o2 := lastRound(s, s2, s1, s0, s3) ^ rk[k+2]
	o3 := lastRound(s, s3, s2, s1, s0) ^ rk[k+3]
	putBlock(dst, o0, o1, o2, o3)
}

// lastRound builds one output column from row 0 of a, row 1 of b, row 2 of
// c and row 3 of d, each byte passed through box.
func lastRound(box *[256]byte, a, b, c, d uint32) uint32 {
	return uint32(box[a>>24])<<24 | uint32(box[b>>16&0xff])<<16 |
		uint32(box[c>>8&0xff])<<8 | uint32(box[d&0xff])
}

func putBlock(dst []byte, a, b, c, d uint32) {
	_ = dst[15]
	binary.BigEndian.PutUint32(dst[0:4], a)
	binary.BigEndian.PutUint32(dst[4:8], b)
	binary.BigEndian.PutUint32(dst[8:12], c)
	binary.BigEndian.PutUint32(dst[12:16], d)
}
