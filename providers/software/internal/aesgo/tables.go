package aesgo

import "math/bits"

// The tables below are computed from the FIPS-197 definitions when the
// package is initialised (about 10 µs), so no magic constants are copied in.
var (
	sbox    [256]byte      // SubBytes, FIPS-197 §5.1.1
	invSbox [256]byte      // InvSubBytes, §5.3.2
	te      [4][256]uint32 // SubBytes+MixColumns per input row
	td      [4][256]uint32 // InvSubBytes+InvMixColumns per input row
)

func init() {
	buildSboxes()
	buildRoundTables()
}

// xtime multiplies b by x in GF(2⁸) modulo x⁸+x⁴+x³+x+1 (FIPS-197 §4.2.1).
func xtime(b byte) byte {
	return b<<1 ^ 0x1b&-(b>>7)
}

// gmul multiplies a and b in GF(2⁸).
func gmul(a, b byte) byte {
	var p byte
	for ; b != 0; b >>= 1 {
		if b&1 != 0 {
			p ^= a
		}
		a = xtime(a)
	}
	return p
}

// ginv returns the multiplicative inverse of a in GF(2⁸), with 0 mapped to
// 0: a²⁵⁴, since every non-zero a satisfies a²⁵⁵ = 1.
func ginv(a byte) byte {
	r := byte(1)
	for e := 254; e > 0; e >>= 1 {
		if e&1 != 0 {
			r = gmul(r, a)
		}
		a = gmul(a, a)
	}
	return r
}

// affine is the affine transformation of FIPS-197 §5.1.1 (equation 5.2).
func affine(b byte) byte {
	return b ^ bits.RotateLeft8(b, 1) ^ bits.RotateLeft8(b, 2) ^
		bits.RotateLeft8(b, 3) ^ bits.RotateLeft8(b, 4) ^ 0x63
}

func buildSboxes() {
	for i := 0; i < 256; i++ {
		s := affine(ginv(byte(i)))
		sbox[i] = s
		invSbox[s] = byte(i)
	}
}

// buildRoundTables fills te and td. te[0][x] is the column MixColumns makes
// from SubBytes(x) in row 0 and zeros elsewhere, coefficients (2,1,1,3);
// td[0][x] likewise for InvSubBytes and InvMixColumns, (e,9,d,b). The
// tables for rows 1..3 are the same columns rotated down by one row each.
func buildRoundTables() {
	for i := 0; i < 256; i++ {
		s := sbox[i]
		e := column(gmul(s, 2), s, s, gmul(s, 3))
		v := invSbox[i]
		d := column(gmul(v, 14), gmul(v, 9), gmul(v, 13), gmul(v, 11))
		for r := 0; r < 4; r++ {
			te[r][i] = bits.RotateLeft32(e, -8*r)
			td[r][i] = bits.RotateLeft32(d, -8*r)
		}
	}
}

// column packs four row bytes into a big-endian column word.
func column(r0, r1, r2, r3 byte) uint32 {
	return uint32(r0)<<24 | uint32(r1)<<16 | uint32(r2)<<8 | uint32(r3)
}
