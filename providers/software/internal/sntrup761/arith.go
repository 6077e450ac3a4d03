package sntrup761

// Elements of F_3 and F_q are held centred: {-1, 0, 1} and
// [-(q-1)/2, (q-1)/2].

// freeze3 reduces x to {-1, 0, 1}. Division by a constant compiles to
// a multiplication, so nothing here branches on x.
func freeze3(x int32) int8 {
	r := x % 3
	r += 3 & (r >> 31) // 0..2
	r -= 3 * (r >> 1)  // 2 -> -1
	return int8(r)
}

// freezeQ reduces x to the centred range mod q.
func freezeQ(x int32) int16 {
	r := x % q
	r += q & (r >> 31)         // 0..q-1
	r -= q & ((q12 - r) >> 31) // above (q-1)/2 -> negative
	return int16(r)
}

// negMask is all ones when x < 0, else 0.
func negMask(x int32) int32 { return x >> 31 }

// nonzeroMask is all ones when x != 0, else 0.
func nonzeroMask(x int32) int32 {
	u := uint32(x)
	return -int32((u | -u) >> 31)
}

// reciprocalQ returns 1/a in F_q (a != 0) as a^(q-2).
func reciprocalQ(a int16) int16 {
	r := int32(1)
	base := int32(a)
	for e := q - 2; e > 0; e >>= 1 {
		if e&1 == 1 {
			r = int32(freezeQ(r * base))
		}
		base = int32(freezeQ(base * base))
	}
	return int16(r)
}

// multRq returns a*b in R/q for a in R/q and b small.
func multRq(a []int16, b []int8) []int16 {
	var prod [2*p - 1]int32
	for i := 0; i < p; i++ {
		ai := int32(a[i])
		for j := 0; j < p; j++ {
			prod[i+j] += ai * int32(b[j])
		}
		// Keep the sums bounded: at most p terms of q/2 each fit in
		// 32 bits (761 * 2295 < 2^21), so no reduction is needed here.
	}
	return reduceRq(prod[:])
}

// reduceRq folds a product of degree < 2p-1 modulo x^p - x - 1
// (x^p = x + 1) and reduces the coefficients mod q.
func reduceRq(prod []int32) []int16 {
	for i := 2*p - 2; i >= p; i-- {
		prod[i-p] += prod[i]
		prod[i-p+1] += prod[i]
	}
	out := make([]int16, p)
	for i := range out {
		out[i] = freezeQ(prod[i])
	}
	return out
}

// mult3 returns a*b in R/3 for small a and b.
func mult3(a, b []int8) []int8 {
	var prod [2*p - 1]int32
	for i := 0; i < p; i++ {
		ai := int32(a[i])
		for j := 0; j < p; j++ {
			prod[i+j] += ai * int32(b[j])
		}
	}
	for i := 2*p - 2; i >= p; i-- {
		prod[i-p] += prod[i]
		prod[i-p+1] += prod[i]
	}
	out := make([]int8, p)
	for i := range out {
		out[i] = freeze3(prod[i])
	}
	return out
}
