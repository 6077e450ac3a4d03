package sntrup761

import (
	"crypto/sha512"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Source supplies the KEM's randomness.
type Source interface {
	// Words fills out with uniform 32-bit words.
	Words(out []uint32) error
	// Bytes fills out with uniform bytes.
	Bytes(out []byte) error
}

// ReaderSource draws from an io.Reader (crypto/rand in use).
type ReaderSource struct{ R io.Reader }

func (s ReaderSource) Words(out []uint32) error {
	b := make([]byte, 4*len(out))
	if _, err := io.ReadFull(s.R, b); err != nil {
		return fmt.Errorf("sntrup761: randomness: %w", err)
	}
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return nil
}

func (s ReaderSource) Bytes(out []byte) error {
	if _, err := io.ReadFull(s.R, out); err != nil {
		return fmt.Errorf("sntrup761: randomness: %w", err)
	}
	return nil
}

// minmax orders a and b without branching on them.
func minmax(a, b *uint32) {
	lt := uint32((uint64(*b) - uint64(*a)) >> 63) // 1 when b < a
	t := (*a ^ *b) & -lt
	*a ^= t
	*b ^= t
}

// sortNetwork sorts x with Knuth's merge exchange (TAOCP 5.2.2, algorithm
// M): the comparisons made depend only on len(x).
func sortNetwork(x []uint32) {
	n := len(x)
	if n < 2 {
		return
	}
	t := 0
	for 1<<t < n {
		t++
	}
	for pp := 1 << (t - 1); pp > 0; pp >>= 1 {
		qq, r, d := 1<<(t-1), 0, pp
		for {
			for i := 0; i < n-d; i++ {
				if i&pp == r {
					minmax(&x[i], &x[i+d])
				}
			}
			if qq == pp {
				break
			}
			d, qq, r = qq-pp, qq>>1, pp
		}
	}
}

// smallRandom draws a uniform Small polynomial.
func smallRandom(src Source) ([]int8, error) {
	L := make([]uint32, p)
	if err := src.Words(L); err != nil {
		return nil, err
	}
	out := make([]int8, p)
	for i, x := range L {
		out[i] = int8(((x&0x3fffffff)*3)>>30) - 1
	}
	return out, nil
}

// shortRandom draws a uniform Short polynomial (exactly w nonzero
// coefficients): w words marked even, the rest odd with bit 1 clear,
// sorted by their random high bits; the low two bits, minus one, are the
// coefficients.
func shortRandom(src Source) ([]int8, error) {
	L := make([]uint32, p)
	if err := src.Words(L); err != nil {
		return nil, err
	}
	for i := range L {
		if i < w {
			L[i] &^= 1
		} else {
			L[i] = L[i]&^2 | 1
		}
	}
	sortNetwork(L)
	out := make([]int8, p)
	for i, x := range L {
		out[i] = int8(x&3) - 1
	}
	return out, nil
}

// hashPrefix is the first 32 bytes of SHA-512(b || in...).
func hashPrefix(b byte, in ...[]byte) []byte {
	h := sha512.New()
	h.Write([]byte{b})
	for _, x := range in {
		h.Write(x)
	}
	return h.Sum(nil)[:hashBytes]
}

func hashConfirm(rEnc, cache []byte) []byte {
	return hashPrefix(2, hashPrefix(3, rEnc), cache)
}

func hashSession(b byte, rEnc, ct []byte) []byte {
	return hashPrefix(b, hashPrefix(3, rEnc), ct)
}

// GenerateKey returns a key pair. The secret key holds f, 1/g in R/3,
// the public key, the rejection value rho and the hash of the public key.
func GenerateKey(src Source) (pk, sk []byte, err error) {
	var g, ginv []int8
	for {
		if g, err = smallRandom(src); err != nil {
			return nil, nil, err
		}
		var ok bool
		if ginv, ok = recip3(g); ok {
			break
		}
	}
	f, err := shortRandom(src)
	if err != nil {
		return nil, nil, err
	}
	finv, _ := recipQ3(f) // f is nonzero, so 3f is invertible
	pk = encodeRq(multRq(finv, g))
	rho := make([]byte, smallBytes)
	if err := src.Bytes(rho); err != nil {
		return nil, nil, err
	}
	sk = make([]byte, 0, SecretKeySize)
	sk = append(sk, encodeSmall(f)...)
	sk = append(sk, encodeSmall(ginv)...)
	sk = append(sk, pk...)
	sk = append(sk, rho...)
	return pk, append(sk, hashPrefix(4, pk)...), nil
}

// hide encrypts r to h and adds the confirmation hash: the ciphertext
// and r's encoding.
func hide(r []int8, h []int16, cache []byte) (ct, rEnc []byte) {
	rEnc = encodeSmall(r)
	hr := multRq(h, r)
	for i, x := range hr {
		hr[i] = x - int16(freeze3(int32(x))) // round to a multiple of 3
	}
	ct = make([]byte, 0, CiphertextSize)
	ct = append(ct, encodeRounded(hr)...)
	return append(ct, hashConfirm(rEnc, cache)...), rEnc
}

// ErrPublicKey reports a public key of the wrong size or not in the
// canonical encoding.
var ErrPublicKey = errors.New("sntrup761: malformed public key")

// Encapsulate returns a ciphertext and the shared key for the public key pk.
func Encapsulate(src Source, pk []byte) (ct, ss []byte, err error) {
	if len(pk) != PublicKeySize || !canonical(pk) {
		return nil, nil, ErrPublicKey
	}
	r, err := shortRandom(src)
	if err != nil {
		return nil, nil, err
	}
	ct, rEnc := hide(r, decodeRq(pk), hashPrefix(4, pk))
	return ct, hashSession(1, rEnc, ct), nil
}

// Decapsulate returns the shared key for ct. A ciphertext that was not
// made for this key gives a pseudorandom key derived from rho (implicit
// rejection), not an error; only a wrong length is an error.
func Decapsulate(sk, ct []byte) ([]byte, error) {
	if len(sk) != SecretKeySize {
		return nil, errors.New("sntrup761: malformed secret key")
	}
	if len(ct) != CiphertextSize {
		return nil, fmt.Errorf("sntrup761: ciphertext is %d bytes, want %d", len(ct), CiphertextSize)
	}
	f := decodeSmall(sk[:smallBytes])
	ginv := decodeSmall(sk[smallBytes : 2*smallBytes])
	pk := sk[2*smallBytes : 2*smallBytes+PublicKeySize]
	rho := sk[2*smallBytes+PublicKeySize : 3*smallBytes+PublicKeySize]
	cache := sk[3*smallBytes+PublicKeySize:]
	r := decrypt(decodeRounded(ct[:roundedBytes]), f, ginv)
	ct2, rEnc := hide(r, decodeRq(pk), cache)
	same := subtle.ConstantTimeCompare(ct, ct2) // 1 when equal
	subtle.ConstantTimeCopy(1-same, rEnc, rho)
	return hashSession(byte(same), rEnc, ct), nil
}

// decrypt recovers r from c = Round(h*r) with f and 1/g: 3fc = g*r + 3f*e
// mod q has small coefficients, so mod 3 it is g*r. A result of the wrong
// weight becomes the fixed Short (1, ..., 1, 0, ..., 0).
func decrypt(c []int16, f, ginv []int8) []int8 {
	cf := multRq(c, f)
	e := make([]int8, p)
	for i, x := range cf {
		e[i] = freeze3(int32(freezeQ(3 * int32(x))))
	}
	ev := mult3(e, ginv)
	weight := int32(0)
	for _, x := range ev {
		weight += int32(x & 1)
	}
	bad := int8(nonzeroMask(weight - w))
	r := make([]int8, p)
	for i, x := range ev {
		if i < w {
			r[i] = ((x ^ 1) &^ bad) ^ 1
		} else {
			r[i] = x &^ bad
		}
	}
	return r
}
