package sntrup761

import "slices"

// encode is the mixed-radix encoding of the specification's section 3.4:
// each R[i] is in [0, M[i]); neighbours are merged pairwise, and whole
// bytes are emitted while a merged radix is at least 2^14, until one
// value remains, which is written in as many bytes as its radix needs.
// The output length depends only on M.
func encode(out []byte, R, M []uint32) []byte {
	if len(M) == 1 {
		r, m := R[0], M[0]
		for m > 1 {
			out = append(out, byte(r))
			r >>= 8
			m = (m + 255) >> 8
		}
		return out
	}
	n := (len(M) + 1) / 2
	R2, M2 := make([]uint32, n), make([]uint32, n)
	i := 0
	for ; i+1 < len(M); i += 2 {
		r, m := R[i]+R[i+1]*M[i], M[i+1]*M[i]
		for m >= 16384 {
			out = append(out, byte(r))
			r >>= 8
			m = (m + 255) >> 8
		}
		R2[i/2], M2[i/2] = r, m
	}
	if i < len(M) {
		R2[i/2], M2[i/2] = R[i], M[i]
	}
	return encode(out, R2, M2)
}

// decode inverts encode. S must be exactly as long as encode's output
// for M; every value it returns is below its radix, whatever S holds.
func decode(S []byte, M []uint32) []uint32 {
	if len(M) == 1 {
		switch {
		case M[0] == 1:
			return []uint32{0}
		case M[0] <= 256:
			return []uint32{uint32(S[0]) % M[0]}
		}
		return []uint32{(uint32(S[0]) + uint32(S[1])<<8) % M[0]}
	}
	n := (len(M) + 1) / 2
	M2 := make([]uint32, n)
	low := make([]uint32, len(M)/2)   // bytes taken at this level
	scale := make([]uint32, len(M)/2) // 256^(bytes taken)
	i := 0
	for ; i+1 < len(M); i += 2 {
		m := M[i] * M[i+1]
		switch {
		case m > 256*16383:
			low[i/2], scale[i/2] = uint32(S[0])+uint32(S[1])<<8, 1<<16
			S = S[2:]
			M2[i/2] = (((m + 255) >> 8) + 255) >> 8
		case m >= 16384:
			low[i/2], scale[i/2] = uint32(S[0]), 1<<8
			S = S[1:]
			M2[i/2] = (m + 255) >> 8
		default:
			low[i/2], scale[i/2] = 0, 1
			M2[i/2] = m
		}
	}
	if i < len(M) {
		M2[i/2] = M[i]
	}
	R2 := decode(S, M2)
	out := make([]uint32, 0, len(M))
	for i = 0; i+1 < len(M); i += 2 {
		r := low[i/2] + scale[i/2]*R2[i/2]
		out = append(out, r%M[i], (r/M[i])%M[i+1])
	}
	if i < len(M) {
		out = append(out, R2[i/2])
	}
	return out
}

func radices(m uint32) []uint32 {
	M := make([]uint32, p)
	for i := range M {
		M[i] = m
	}
	return M
}

var (
	radixQ       = radices(q)
	radixRounded = radices((q + 2) / 3)
)

// encodeRq encodes an element of R/q (centred coefficients).
func encodeRq(h []int16) []byte {
	R := make([]uint32, p)
	for i, c := range h {
		R[i] = uint32(int32(c) + q12)
	}
	return encode(make([]byte, 0, rqBytes), R, radixQ)
}

func decodeRq(b []byte) []int16 {
	R := decode(b, radixQ)
	out := make([]int16, p)
	for i, r := range R {
		out[i] = int16(int32(r) - q12)
	}
	return out
}

// encodeRounded encodes an element of R/q whose coefficients are
// multiples of 3 by their index among those.
func encodeRounded(c []int16) []byte {
	R := make([]uint32, p)
	for i, x := range c {
		R[i] = uint32((int32(x)+q12)*10923) >> 15
	}
	return encode(make([]byte, 0, roundedBytes), R, radixRounded)
}

func decodeRounded(b []byte) []int16 {
	R := decode(b, radixRounded)
	out := make([]int16, p)
	for i, r := range R {
		out[i] = int16(int32(r)*3 - q12)
	}
	return out
}

// encodeSmall packs four coefficients in {-1, 0, 1} per byte, low bits
// first.
func encodeSmall(f []int8) []byte {
	out := make([]byte, smallBytes)
	for i, c := range f {
		out[i/4] |= byte(c+1) << (2 * (i % 4))
	}
	return out
}

func decodeSmall(b []byte) []int8 {
	out := make([]int8, p)
	for i := range out {
		out[i] = int8(b[i/4]>>(2*(i%4))&3) - 1
	}
	return out
}

// canonical reports whether b is the encoding encodeRq would give of
// what it decodes to.
func canonical(b []byte) bool {
	return slices.Equal(encodeRq(decodeRq(b)), b)
}
