package software

import (
	"crypto/ecdh"
	"crypto/mlkem"
	"crypto/rand"
	"fmt"

	"github.com/offload/offload/provider"
)

var curves = map[string]ecdh.Curve{
	"x25519":    ecdh.X25519(),
	"ecdh-p256": ecdh.P256(),
	"ecdh-p384": ecdh.P384(),
	"ecdh-p521": ecdh.P521(),
}

type keyAgreement struct {
	alg  *provider.Algorithm
	priv *ecdh.PrivateKey
}

// NewKeyAgreement returns a fresh X25519, P-256, P-384, P-521 or MODP-group key pair.
func (p *Provider) NewKeyAgreement(alg *provider.Algorithm) (provider.KeyAgreement, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	if grp, ok := modpGroups[alg.Name]; ok {
		return newDH(alg, grp)
	}
	c, ok := curves[alg.Name]
	if !ok {
		return nil, unsupported(alg)
	}
	priv, err := c.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("software: %s: %w", alg.Name, err)
	}
	return &keyAgreement{alg: alg, priv: priv}, nil
}

func (k *keyAgreement) PublicKey() []byte { return k.priv.PublicKey().Bytes() }

// SharedSecret rejects peer keys of the wrong length, points off the curve
// and X25519 low-order points (an all-zero result).
func (k *keyAgreement) SharedSecret(peer []byte) ([]byte, error) {
	if len(peer) != k.alg.PublicKeySize {
		return nil, fmt.Errorf("software: %s peer key is %d bytes, want %d", k.alg.Name, len(peer), k.alg.PublicKeySize)
	}
	pub, err := k.priv.Curve().NewPublicKey(peer)
	if err != nil {
		return nil, fmt.Errorf("software: %s peer key: %w", k.alg.Name, err)
	}
	s, err := k.priv.ECDH(pub)
	if err != nil {
		return nil, fmt.Errorf("software: %s: %w", k.alg.Name, err)
	}
	return s, nil
}

type decapsulator struct{ dk *mlkem.DecapsulationKey768 }

// NewDecapsulator returns a fresh ML-KEM-768 or sntrup761 decapsulation key.
func (p *Provider) NewDecapsulator(alg *provider.Algorithm) (provider.Decapsulator, error) {
	if err := p.live(); err != nil {
		return nil, err
	}
	if alg.Name == "sntrup761" {
		return newSntrupDecapsulator()
	}
	if alg.Name != "ml-kem-768" {
		return nil, unsupported(alg)
	}
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		return nil, fmt.Errorf("software: ml-kem-768: %w", err)
	}
	return &decapsulator{dk: dk}, nil
}

func (d *decapsulator) EncapsulationKey() []byte { return d.dk.EncapsulationKey().Bytes() }

func (d *decapsulator) Decapsulate(ct []byte) ([]byte, error) {
	s, err := d.dk.Decapsulate(ct)
	if err != nil {
		return nil, fmt.Errorf("software: ml-kem-768 decapsulate: %w", err)
	}
	return s, nil
}

// Encapsulate runs ML-KEM-768 or sntrup761 against a peer's encapsulation key.
func (p *Provider) Encapsulate(alg *provider.Algorithm, ek []byte) (shared, ciphertext []byte, err error) {
	if err := p.live(); err != nil {
		return nil, nil, err
	}
	if alg.Name == "sntrup761" {
		return sntrupEncapsulate(ek)
	}
	if alg.Name != "ml-kem-768" {
		return nil, nil, unsupported(alg)
	}
	key, err := mlkem.NewEncapsulationKey768(ek)
	if err != nil {
		return nil, nil, fmt.Errorf("software: ml-kem-768 encapsulation key: %w", err)
	}
	shared, ciphertext = key.Encapsulate()
	return shared, ciphertext, nil
}
