package software

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/offload/offload/provider"
)

// TestMODPPrimes checks the RFC 3526 (and RFC 2409) shape (top and bottom
// 64 bits all ones) and that p and (p-1)/2 are prime.
func TestMODPPrimes(t *testing.T) {
	for name, bits := range map[string]int{"modp1024": 1024, "modp2048": 2048, "modp4096": 4096, "modp8192": 8192} {
		p := modpGroups[name].p
		low := new(big.Int).And(p, new(big.Int).SetUint64(^uint64(0)))
		if p.BitLen() != bits || low.Uint64() != ^uint64(0) || new(big.Int).Rsh(p, uint(bits-64)).Uint64() != ^uint64(0) {
			t.Errorf("%s: not of the RFC 3526 shape", name)
		}
		if testing.Short() && bits > 2048 {
			continue
		}
		q := new(big.Int).Rsh(p, 1)
		if !p.ProbablyPrime(4) || !q.ProbablyPrime(4) {
			t.Errorf("%s: not a safe prime", name)
		}
	}
}

func TestDHRefusesPMinus1(t *testing.T) {
	alg := provider.MustLookup("modp2048")
	ka, err := New().NewKeyAgreement(alg)
	if err != nil {
		t.Fatal(err)
	}
	pm1 := new(big.Int).Sub(modpGroups["modp2048"].p, big.NewInt(1)).FillBytes(make([]byte, 256))
	if _, err := ka.SharedSecret(pm1); err == nil {
		t.Error("p-1 accepted")
	}
	p := modpGroups["modp2048"].p.FillBytes(make([]byte, 256))
	if _, err := ka.SharedSecret(p); err == nil {
		t.Error("p accepted")
	}
}

func TestGroupKeyAgreement(t *testing.T) {
	alg := provider.MustLookup("modp-gex")
	sw := New()
	p, g := modpGroups["modp4096"].p, big.NewInt(5)
	a, err := sw.NewGroupKeyAgreement(alg, p, g)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sw.NewGroupKeyAgreement(alg, p, g)
	if err != nil {
		t.Fatal(err)
	}
	sa, err1 := a.SharedSecret(b.PublicKey())
	sb, err2 := b.SharedSecret(a.PublicKey())
	if err1 != nil || err2 != nil || !bytes.Equal(sa, sb) || len(sa) != 512 {
		t.Fatalf("shared secrets differ: %v %v", err1, err2)
	}
	for name, c := range map[string][2]*big.Int{
		"even modulus":  {new(big.Int).Lsh(big.NewInt(1), 2048), g},
		"small modulus": {big.NewInt(1000003), g},
		"huge modulus":  {new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 16400), big.NewInt(1)), g},
		"generator 1":   {p, big.NewInt(1)},
		"generator p-1": {p, new(big.Int).Sub(p, big.NewInt(1))},
		"nil generator": {p, nil},
	} {
		if _, err := sw.NewGroupKeyAgreement(alg, c[0], c[1]); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := sw.NewGroupKeyAgreement(provider.MustLookup("modp2048"), p, g); err == nil {
		t.Error("a fixed group accepted as modp-gex")
	}
}
