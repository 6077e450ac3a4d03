package software

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"

	"filippo.io/bigmod"

	"github.com/offload/offload/provider"
)

// dhExponentBytes is the size of a private exponent: 512 bits, twice the
// strength of the largest symmetric key SSH derives, as OpenSSH sizes it.
const dhExponentBytes = 64

// Limits on a group named by the caller (group exchange).
const (
	minGroupBits = 1024
	maxGroupBits = 16384
)

type dhGroup struct {
	p    *big.Int
	g    *big.Int
	size int // bytes of p
}

var modpGroups = map[string]*dhGroup{
	"modp1024": fixedGroup("modp1024"),
	"modp2048": fixedGroup("modp2048"),
	"modp4096": fixedGroup("modp4096"),
	"modp8192": fixedGroup("modp8192"),
	"modp-gex": fixedGroup("modp2048"), // without a group: group 14
}

func fixedGroup(name string) *dhGroup {
	p, g, ok := provider.FiniteFieldGroup(name)
	if !ok {
		panic("software: no MODP group " + name)
	}
	return &dhGroup{p: p, g: g, size: (p.BitLen() + 7) / 8}
}

// dhKeyAgreement is one side of finite-field Diffie-Hellman, computed in
// constant time with filippo.io/bigmod.
type dhKeyAgreement struct {
	alg *provider.Algorithm
	grp *dhGroup
	m   *bigmod.Modulus
	x   []byte // private exponent
	pub []byte // g^x mod p, big-endian, grp.size bytes
}

func newDH(alg *provider.Algorithm, grp *dhGroup) (*dhKeyAgreement, error) {
	m, err := bigmod.NewModulus(grp.p.Bytes())
	if err != nil {
		return nil, fmt.Errorf("software: %s: %w", alg.Name, err)
	}
	g, err := bigmod.NewNat().SetBytes(grp.g.Bytes(), m)
	if err != nil {
		return nil, fmt.Errorf("software: %s generator: %w", alg.Name, err)
	}
	x := make([]byte, dhExponentBytes)
	if _, err := rand.Read(x); err != nil {
		return nil, fmt.Errorf("software: %s: %w", alg.Name, err)
	}
	x[0] |= 0x80 // a full-size exponent
	y := bigmod.NewNat().Exp(g, x, m)
	return &dhKeyAgreement{alg: alg, grp: grp, m: m, x: x, pub: y.Bytes(m)}, nil
}

func (k *dhKeyAgreement) PublicKey() []byte { return k.pub }

var errDHPeer = errors.New("peer value not in [2, p-2]")

// SharedSecret takes the peer's value big-endian, padded to the size of
// p, and refuses 0, 1, p-1 and anything not below p (RFC 4253 §8, RFC
// 8268 §4); a result of 1 (a peer value of small order) is refused too.
func (k *dhKeyAgreement) SharedSecret(peer []byte) ([]byte, error) {
	if len(peer) != k.grp.size {
		return nil, fmt.Errorf("software: %s peer value is %d bytes, want %d", k.alg.Name, len(peer), k.grp.size)
	}
	y, err := bigmod.NewNat().SetBytes(peer, k.m)
	if err != nil {
		return nil, fmt.Errorf("software: %s: %w", k.alg.Name, errDHPeer)
	}
	if y.IsZero() == 1 || y.IsOne() == 1 || y.IsMinusOne(k.m) == 1 {
		return nil, fmt.Errorf("software: %s: %w", k.alg.Name, errDHPeer)
	}
	s := bigmod.NewNat().Exp(y, k.x, k.m)
	if s.IsOne() == 1 {
		return nil, fmt.Errorf("software: %s: shared secret is 1", k.alg.Name)
	}
	return s.Bytes(k.m), nil
}

// NewGroupKeyAgreement returns a key pair in the group (p, g) for
// "modp-gex": p must be odd, of 1024 to 16384 bits, and 1 < g < p-1.
// Whether p is a safe prime is the caller's to know (moduli files are
// tested when made); the bounds here keep the work bounded.
func (p *Provider) NewGroupKeyAgreement(alg *provider.Algorithm, prime, g *big.Int) (provider.KeyAgreement, error) {
	if alg.Name != "modp-gex" {
		return nil, unsupported(alg)
	}
	if prime == nil || g == nil || prime.Bit(0) == 0 || prime.BitLen() < minGroupBits || prime.BitLen() > maxGroupBits {
		return nil, fmt.Errorf("software: modp-gex: prime must be odd and of %d to %d bits", minGroupBits, maxGroupBits)
	}
	pm1 := new(big.Int).Sub(prime, big.NewInt(1))
	if g.Cmp(big.NewInt(1)) <= 0 || g.Cmp(pm1) >= 0 {
		return nil, errors.New("software: modp-gex: generator must be in [2, p-2]")
	}
	return newDH(alg, &dhGroup{p: prime, g: g, size: (prime.BitLen() + 7) / 8})
}
