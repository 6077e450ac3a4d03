// Package sntrup761 is Streamlined NTRU Prime with parameters (p, q, w) =
// (761, 4591, 286), the KEM behind sntrup761x25519-sha512 in SSH. It is
// written from the NTRU Prime round-3 specification ("NTRU Prime: round
// 3", 2020-10-07): the ring R = Z[x]/(x^p - x - 1), Short (weight-w
// ternary) and Small polynomials, rounding to multiples of 3, the
// mixed-radix encodings of its section 3, and the KEM with plaintext
// confirmation and implicit rejection.
//
// # Constant time
//
// Arithmetic on secrets has no secret-dependent branches or memory
// indices: inversion is a fixed number of division steps, the sort that
// makes a Short polynomial is a sorting network, and the choice between
// the real session key and the rejection key is a mask.
//
// # Randomness
//
// Every random input is a list of 32-bit words (or, for the rejection
// value rho, bytes) drawn from a Source. With an io.Reader each list is
// read in one call; the known-answer tests use a Source that draws each
// word with its own call, as the submission's generator did.
package sntrup761

// Parameters of sntrup761.
const (
	p = 761
	q = 4591
	w = 286

	q12 = (q - 1) / 2

	smallBytes   = (p + 3) / 4 // 191
	hashBytes    = 32
	roundedBytes = 1007
	rqBytes      = 1158

	// PublicKeySize, CiphertextSize, SecretKeySize and SharedKeySize
	// are the sizes of the KEM's byte strings.
	PublicKeySize  = rqBytes
	CiphertextSize = roundedBytes + hashBytes
	SecretKeySize  = 2*smallBytes + PublicKeySize + smallBytes + hashBytes
	SharedKeySize  = hashBytes
)
