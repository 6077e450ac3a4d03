package providertest

import (
	"bytes"
	"crypto/ecdh"
	"crypto/mlkem"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/offload/offload/provider"
)

// TestKeyAgreement tests ephemeral Diffie-Hellman from p for alg: sizes
// from the catalog, both sides agree, the provider agrees with crypto/ecdh
// in both directions, and malformed, off-curve and low-order peer keys are
// refused with an error.
func TestKeyAgreement(t *testing.T, p provider.KeyAgreementProvider, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilyKeyAgreement)
	newKA := func(t *testing.T) provider.KeyAgreement {
		t.Helper()
		var ka provider.KeyAgreement
		var err error
		if !noPanic(t, "NewKeyAgreement", func() { ka, err = p.NewKeyAgreement(alg) }) {
			t.FailNow()
		}
		if err != nil || ka == nil {
			t.Fatalf("NewKeyAgreement(%s) = %v, %v", alg.Name, ka, err)
		}
		return ka
	}
	t.Run("BothSides", func(t *testing.T) {
		a, b := newKA(t), newKA(t)
		defer release(t, a)
		defer release(t, b)
		if len(a.PublicKey()) != alg.PublicKeySize {
			t.Fatalf("public key is %d bytes, catalog says %d", len(a.PublicKey()), alg.PublicKeySize)
		}
		if bytes.Equal(a.PublicKey(), b.PublicKey()) {
			t.Fatalf("two key agreements have the same public key")
		}
		sa := shared(t, a, b.PublicKey())
		sb := shared(t, b, a.PublicKey())
		if len(sa) != alg.SharedSize || !bytes.Equal(sa, sb) {
			t.Errorf("shared secrets %x and %x: want equal, %d bytes", sa, sb, alg.SharedSize)
		}
	})
	t.Run("Reference", func(t *testing.T) {
		curve := refCurve(alg)
		if curve == nil {
			t.Skipf("no reference for %s", alg.Name)
		}
		checkReferenceCurve(t, alg, curve)
		for i := 0; i < 5; i++ {
			ka := newKA(t)
			priv, err := curve.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			ours := shared(t, ka, priv.PublicKey().Bytes())
			peer, err := curve.NewPublicKey(ka.PublicKey())
			release(t, ka)
			if err != nil {
				t.Fatalf("crypto/ecdh refuses the provider's public key %x: %v", ka.PublicKey(), err)
			}
			theirs, err := priv.ECDH(peer)
			if err != nil || !bytes.Equal(ours, theirs) {
				t.Errorf("provider computes %x, crypto/ecdh %x (%v)", ours, theirs, err)
			}
		}
	})
	t.Run("BadPeers", func(t *testing.T) {
		ka, other := newKA(t), newKA(t)
		defer release(t, ka)
		defer release(t, other)
		for _, bp := range badPeers(alg, other.PublicKey()) {
			var s []byte
			var err error
			what := "SharedSecret with " + bp.what
			if noPanic(t, what, func() { s, err = ka.SharedSecret(bp.key) }) && err == nil {
				t.Errorf("%s (%x): accepted, shared secret %x", what, bp.key, s)
			}
		}
		// A refused peer must not spoil the key agreement.
		if s1, s2 := shared(t, ka, other.PublicKey()), shared(t, other, ka.PublicKey()); !bytes.Equal(s1, s2) {
			t.Errorf("after refusing bad peers the sides no longer agree")
		}
	})
}

func shared(t *testing.T, ka provider.KeyAgreement, peer []byte) []byte {
	t.Helper()
	var s []byte
	var err error
	if !noPanic(t, "SharedSecret", func() { s, err = ka.SharedSecret(peer) }) || err != nil {
		t.Fatalf("SharedSecret(valid %d-byte peer): %v", len(peer), err)
	}
	return s
}

// checkReferenceCurve checks crypto/ecdh against RFC 7748 before the suite
// trusts it (X25519 only: the NIST curves have no fixed-key vector here).
func checkReferenceCurve(t *testing.T, alg *provider.Algorithm, curve ecdh.Curve) {
	t.Helper()
	if alg.Name != "x25519" {
		return
	}
	v := x25519Vector
	a, err1 := curve.NewPrivateKey(unhex(v.alicePriv))
	b, err2 := curve.NewPrivateKey(unhex(v.bobPriv))
	if err1 != nil || err2 != nil {
		t.Fatalf("RFC 7748 private keys refused: %v %v", err1, err2)
	}
	if !bytes.Equal(a.PublicKey().Bytes(), unhex(v.alicePub)) || !bytes.Equal(b.PublicKey().Bytes(), unhex(v.bobPub)) {
		t.Fatalf("crypto/ecdh X25519 public keys differ from RFC 7748 §6.1")
	}
	s, err := a.ECDH(b.PublicKey())
	if err != nil || !bytes.Equal(s, unhex(v.shared)) {
		t.Fatalf("crypto/ecdh X25519 shared secret %x (%v), RFC 7748 §6.1 says %s", s, err, v.shared)
	}
}

type badPeer struct {
	what string
	key  []byte
}

// badPeers lists peer keys that must be refused: wrong lengths for every
// curve, low-order points for X25519, and for the NIST curves a bad
// prefix, the point at infinity, a point off the curve and coordinates
// not reduced modulo p.
func badPeers(alg *provider.Algorithm, good []byte) []badPeer {
	n := alg.PublicKeySize
	out := []badPeer{
		{"an empty key", nil},
		{"a key one byte short", good[:n-1]},
		{"a key one byte long", append(clone(good), 0)},
		{"a key of twice the length", append(clone(good), good...)},
	}
	if strings.HasPrefix(alg.Name, "modp") {
		return append(out, finiteFieldBadPeers(n)...)
	}
	if alg.Name == "x25519" {
		for i, h := range x25519LowOrder {
			out = append(out, badPeer{fmt.Sprintf("low-order point %d", i), unhex(h)})
		}
		return out
	}
	offCurve := clone(good)
	offCurve[n-1] ^= 1
	compressed := append([]byte{2 | good[n-1]&1}, good[1:1+(n-1)/2]...)
	out = append(out,
		badPeer{"the point at infinity", []byte{0}},
		badPeer{"the point at infinity, padded", make([]byte, n)},
		badPeer{"a compressed point", compressed},
		badPeer{"a bad prefix byte", append([]byte{5}, good[1:]...)},
		badPeer{"a point off the curve", offCurve},
		badPeer{"coordinates of all ones (not below p)", append([]byte{4}, bytes.Repeat([]byte{0xff}, n-1)...)},
	)
	return out
}

// finiteFieldBadPeers are the values a finite-field Diffie-Hellman peer
// must not send (RFC 8268 §4): 0, 1 and, as a MODP prime is below
// 2^n - 1, all ones (not below p). p-1 needs the prime and is checked by
// the providers' own tests.
func finiteFieldBadPeers(n int) []badPeer {
	zero := make([]byte, n)
	one := make([]byte, n)
	one[n-1] = 1
	return []badPeer{
		{"zero", zero},
		{"one", one},
		{"all ones (not below p)", bytes.Repeat([]byte{0xff}, n)},
	}
}

// TestKEM tests key encapsulation from p for alg: sizes from the catalog,
// round trips, agreement with crypto/mlkem in both directions, implicit
// rejection of a changed ciphertext, and refusal of inputs of the wrong
// length or out of range.
func TestKEM(t *testing.T, p provider.KEMProvider, alg *provider.Algorithm) {
	t.Helper()
	checkFamily(t, alg, provider.FamilyKEM)
	var dk provider.Decapsulator
	var err error
	if !noPanic(t, "NewDecapsulator", func() { dk, err = p.NewDecapsulator(alg) }) {
		t.FailNow()
	}
	if err != nil || dk == nil {
		t.Fatalf("NewDecapsulator(%s) = %v, %v", alg.Name, dk, err)
	}
	defer release(t, dk)
	kt := &kemTest{p: p, alg: alg, dk: dk}
	t.Run("RoundTrip", kt.roundTrip)
	t.Run("Reference", kt.reference)
	t.Run("ChangedCiphertext", kt.changedCiphertext)
	t.Run("BadInputs", kt.badInputs)
}

type kemTest struct {
	p   provider.KEMProvider
	alg *provider.Algorithm
	dk  provider.Decapsulator
}

func (kt *kemTest) encapsulate(t *testing.T, ek []byte) (shared, ct []byte) {
	t.Helper()
	var err error
	if !noPanic(t, "Encapsulate", func() { shared, ct, err = kt.p.Encapsulate(kt.alg, ek) }) || err != nil {
		t.Fatalf("Encapsulate(valid %d-byte key): %v", len(ek), err)
	}
	if len(shared) != kt.alg.SharedSize || len(ct) != kt.alg.CiphertextSize {
		t.Fatalf("Encapsulate gave a %d-byte secret and %d-byte ciphertext, catalog says %d and %d",
			len(shared), len(ct), kt.alg.SharedSize, kt.alg.CiphertextSize)
	}
	return shared, ct
}

func (kt *kemTest) decapsulate(t *testing.T, ct []byte) []byte {
	t.Helper()
	var s []byte
	var err error
	if !noPanic(t, "Decapsulate", func() { s, err = kt.dk.Decapsulate(ct) }) || err != nil {
		t.Fatalf("Decapsulate(%d-byte ciphertext): %v", len(ct), err)
	}
	return s
}

func (kt *kemTest) roundTrip(t *testing.T) {
	ek := kt.dk.EncapsulationKey()
	if len(ek) != kt.alg.PublicKeySize {
		t.Fatalf("encapsulation key is %d bytes, catalog says %d", len(ek), kt.alg.PublicKeySize)
	}
	s1, ct1 := kt.encapsulate(t, ek)
	s2, ct2 := kt.encapsulate(t, ek)
	if bytes.Equal(ct1, ct2) || bytes.Equal(s1, s2) {
		t.Errorf("two encapsulations gave the same ciphertext or secret")
	}
	if got := kt.decapsulate(t, ct1); !bytes.Equal(got, s1) {
		t.Errorf("Decapsulate = %x, Encapsulate said %x", got, s1)
	}
}

func (kt *kemTest) reference(t *testing.T) {
	if kt.alg.Name != "ml-kem-768" {
		t.Skipf("no reference for %s", kt.alg.Name)
	}
	ek, err := mlkem.NewEncapsulationKey768(kt.dk.EncapsulationKey())
	if err != nil {
		t.Fatalf("crypto/mlkem refuses the provider's encapsulation key: %v", err)
	}
	want, ct := ek.Encapsulate()
	if got := kt.decapsulate(t, ct); !bytes.Equal(got, want) {
		t.Errorf("provider decapsulates %x, crypto/mlkem encapsulated %x", got, want)
	}
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		t.Fatal(err)
	}
	s, ct2 := kt.encapsulate(t, dk.EncapsulationKey().Bytes())
	if got, err := dk.Decapsulate(ct2); err != nil || !bytes.Equal(got, s) {
		t.Errorf("crypto/mlkem decapsulates %x (%v), provider encapsulated %x", got, err, s)
	}
}

// changedCiphertext: ML-KEM rejects implicitly, so a changed ciphertext
// of the right length decapsulates without error to a different secret.
func (kt *kemTest) changedCiphertext(t *testing.T) {
	s, ct := kt.encapsulate(t, kt.dk.EncapsulationKey())
	for _, i := range []int{0, len(ct) / 2, len(ct) - 1} {
		var got []byte
		var err error
		if !noPanic(t, "Decapsulate", func() { got, err = kt.dk.Decapsulate(flip(ct, i, 0)) }) {
			continue
		}
		if err == nil && bytes.Equal(got, s) {
			t.Errorf("ciphertext byte %d changed: decapsulated to the original secret", i)
		}
	}
}

func (kt *kemTest) badInputs(t *testing.T) {
	ek := kt.dk.EncapsulationKey()
	_, ct := kt.encapsulate(t, ek)
	badEK := map[string][]byte{
		"empty":          nil,
		"one byte short": ek[:len(ek)-1],
		"one byte long":  append(clone(ek), 0),
	}
	switch kt.alg.Name {
	case "ml-kem-768":
		badEK["coefficient >= q"] = append([]byte{0xff, 0xff}, ek[2:]...)
	case "sntrup761":
		// The last two bytes carry the top of the mixed-radix encoding:
		// all ones is above what any element of R/q encodes to.
		badEK["non-canonical encoding"] = append(clone(ek[:len(ek)-2]), 0xff, 0xff)
	}
	for what, k := range badEK {
		var err error
		if noPanic(t, "Encapsulate to a key "+what, func() { _, _, err = kt.p.Encapsulate(kt.alg, k) }) && err == nil {
			t.Errorf("Encapsulate to an encapsulation key %s: accepted", what)
		}
	}
	for what, c := range map[string][]byte{"empty": nil, "one byte short": ct[:len(ct)-1], "one byte long": append(clone(ct), 0)} {
		var err error
		if noPanic(t, "Decapsulate "+what, func() { _, err = kt.dk.Decapsulate(c) }) && err == nil {
			t.Errorf("Decapsulate of a ciphertext %s: accepted", what)
		}
	}
	other := otherFamily(provider.FamilyKEM)
	var dk provider.Decapsulator
	var err error
	if noPanic(t, "NewDecapsulator("+other.Name+")", func() { dk, err = kt.p.NewDecapsulator(other) }) && err == nil {
		t.Errorf("NewDecapsulator(%s): accepted an algorithm of family %s", other.Name, other.Family)
		release(t, dk)
	}
}
