package provider

import (
	"math/big"
	"time"
)

// GroupKeyAgreementProvider makes ephemeral finite-field Diffie-Hellman
// key pairs in a group the caller names by its prime p and generator g,
// as Diffie-Hellman group exchange (RFC 4419) needs. The catalog entry
// is "modp-gex"; its plain NewKeyAgreement uses the 2048-bit group of RFC
// 3526 (group 14).
type GroupKeyAgreementProvider interface {
	NewGroupKeyAgreement(alg *Algorithm, p, g *big.Int) (KeyAgreement, error)
}

// GroupKeyAgreement returns a fresh key pair for alg in the group (p, g).
// Public keys and shared secrets are big-endian, as long as p.
func (r *Registry) GroupKeyAgreement(name string, p, g *big.Int) (KeyAgreement, error) {
	alg, err := lookupFamily(name, FamilyKeyAgreement)
	if err != nil {
		return nil, err
	}
	var start time.Time
	ka, src, err := build(r, alg, func(p0 Provider) (KeyAgreement, error) {
		start = time.Now()
		gp, ok := p0.(GroupKeyAgreementProvider)
		if !ok {
			return nil, &UnsupportedError{Provider: p0.Name(), Algorithm: name}
		}
		return gp.NewGroupKeyAgreement(alg, p, g)
	})
	if err != nil {
		return nil, err
	}
	src.counter(OpGenerate).timed(start, 0, nil)
	return &servedKeyAgreement{KeyAgreement: ka, src: src, c: src.counter(OpDerive)}, nil
}
