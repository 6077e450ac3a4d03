package sntrup761

// Inversion by division steps (Bernstein and Yang, "Fast constant-time
// gcd computation and modular inversion", 2019): 2p-1 steps over the
// reversed polynomials f = x^p - x - 1 and g = the input, each a masked
// swap and an elimination of the constant term, so the sequence of
// operations does not depend on the input. delta ends at 0 exactly when
// the input is invertible.

// divstepState is the working set of one inversion, coefficients as
// int32 for the masked arithmetic.
type divstepState struct {
	f, g, v, r [p + 1]int32
	delta      int32
}

func newDivsteps(in []int8, r0 int32) *divstepState {
	s := &divstepState{delta: 1}
	s.r[0] = r0
	s.f[0], s.f[p-1], s.f[p] = 1, -1, -1
	for i := 0; i < p; i++ {
		s.g[p-1-i] = int32(in[i])
	}
	return s
}

// step shifts v, swaps (f, v) with (g, r) when delta > 0 and g0 != 0,
// and bumps delta; the caller then eliminates g's constant term.
func (s *divstepState) step() {
	copy(s.v[1:], s.v[:p])
	s.v[0] = 0
	swap := negMask(-s.delta) & nonzeroMask(s.g[0])
	s.delta ^= swap & (s.delta ^ -s.delta)
	s.delta++
	for i := range s.f {
		t := swap & (s.f[i] ^ s.g[i])
		s.f[i] ^= t
		s.g[i] ^= t
		t = swap & (s.v[i] ^ s.r[i])
		s.v[i] ^= t
		s.r[i] ^= t
	}
}

// shiftG divides g by x after its constant term was eliminated.
func (s *divstepState) shiftG() {
	copy(s.g[:p], s.g[1:])
	s.g[p] = 0
}

// recip3 returns 1/in in R/3 and whether in is invertible.
func recip3(in []int8) ([]int8, bool) {
	s := newDivsteps(in, 1)
	for range 2*p - 1 {
		s.step()
		c := -s.g[0] * s.f[0] // f0 is a unit of F_3: -g0/f0 = -g0*f0
		for i := range s.g {
			s.g[i] = int32(freeze3(s.g[i] + c*s.f[i]))
			s.r[i] = int32(freeze3(s.r[i] + c*s.v[i]))
		}
		s.shiftG()
	}
	out := make([]int8, p)
	for i := range out {
		out[i] = int8(s.f[0] * s.v[p-1-i])
	}
	return out, s.delta == 0
}

// recipQ3 returns 1/(3*in) in R/q and whether it exists (it always does
// for a nonzero small in: x^p - x - 1 is irreducible mod q).
func recipQ3(in []int8) ([]int16, bool) {
	s := newDivsteps(in, int32(reciprocalQ(3)))
	for range 2*p - 1 {
		s.step()
		f0, g0 := s.f[0], s.g[0]
		for i := range s.g {
			s.g[i] = int32(freezeQ(f0*s.g[i] - g0*s.f[i]))
			s.r[i] = int32(freezeQ(f0*s.r[i] - g0*s.v[i]))
		}
		s.shiftG()
	}
	scale := int32(reciprocalQ(int16(s.f[0])))
	out := make([]int16, p)
	for i := range out {
		out[i] = freezeQ(scale * s.v[p-1-i])
	}
	return out, s.delta == 0
}
