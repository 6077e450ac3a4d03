//go:build cgo && !nopkcs11

package pkcs11

import (
	"context"
	"crypto/ecdh"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/provider"
)

// ecdhKA is one side of an ECDH exchange whose ephemeral private key is a
// session object on a token (CKM_EC_KEY_PAIR_GEN, then CKM_ECDH1_DERIVE).
// The key pair is destroyed after SharedSecret, on Close, or when the
// value is garbage collected.
type ecdhKA struct {
	keys *ecdhKeys
	pub  []byte
	alg  *provider.Algorithm
	name string
}

type ecdhKeys struct {
	mu        sync.Mutex
	tok       *token
	priv, pub pkcs11.ObjectHandle
	gen       uint64
	epoch     uint64
	done      bool
}

var (
	_ provider.KeyAgreement = (*ecdhKA)(nil)
	_ provider.Provenancer  = (*ecdhKA)(nil)
)

func curveOf(alg *provider.Algorithm) (ecdh.Curve, []byte, error) {
	switch alg.Name {
	case "ecdh-p256":
		return ecdh.P256(), oidP256, nil
	case "ecdh-p384":
		return ecdh.P384(), oidP384, nil
	}
	return nil, nil, &provider.UnsupportedError{Provider: DefaultName, Algorithm: alg.Name}
}

func (p *Provider) newECDH(ctx context.Context, alg *provider.Algorithm) (provider.KeyAgreement, error) {
	_, params, err := curveOf(alg)
	if err != nil {
		return nil, err
	}
	t, err := p.pickToken(alg.Name, provider.OpDerive)
	if err != nil {
		return nil, err
	}
	k := &ecdhKeys{tok: t}
	var pub []byte
	ctx, cancel := p.c.deadline(ctx)
	defer cancel()
	err = t.do(ctx, "generate ECDH key", alg.Name, func(h pkcs11.SessionHandle) error {
		pubH, privH, err := p.c.api.GenerateKeyPair(h, []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_EC_KEY_PAIR_GEN, nil)},
			[]*pkcs11.Attribute{
				pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false),
				pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, params),
			},
			[]*pkcs11.Attribute{
				pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false),
				pkcs11.NewAttribute(pkcs11.CKA_PRIVATE, true),
				pkcs11.NewAttribute(pkcs11.CKA_SENSITIVE, true),
				pkcs11.NewAttribute(pkcs11.CKA_EXTRACTABLE, false),
				pkcs11.NewAttribute(pkcs11.CKA_DERIVE, true),
			})
		if err != nil {
			return err
		}
		k.priv, k.pub, k.gen, k.epoch = privH, pubH, p.c.mod.gen.Load(), k.tokEpoch()
		attrs, err := p.c.api.GetAttributeValue(h, pubH, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_EC_POINT, nil)})
		if err != nil {
			return err
		}
		pub, err = unwrapPoint(attrs[0].Value, alg.PublicKeySize)
		return err
	})
	if err != nil {
		if k.gen != 0 {
			k.destroy()
		}
		return nil, err
	}
	ka := &ecdhKA{keys: k, pub: pub, alg: alg, name: p.name}
	runtime.AddCleanup(ka, func(k *ecdhKeys) { k.destroy() }, k)
	return ka, nil
}

// Provenance says which token holds the ephemeral key.
func (ka *ecdhKA) Provenance() provider.Provenance {
	slot, _, d := ka.keys.tok.state()
	return provider.Provenance{Algorithm: ka.alg.Name, Provider: ka.name, Kind: provider.KindHardware,
		Token: d.Label, Serial: d.Serial, Slot: slot}
}

func (k *ecdhKeys) tokEpoch() uint64 {
	_, e, _ := k.tok.state()
	return e
}

// PublicKey returns the uncompressed point (0x04‖X‖Y).
func (ka *ecdhKA) PublicKey() []byte { return ka.pub }

// SharedSecret derives the X coordinate of the shared point on the token.
// The peer's point is checked in Go first: a malformed, off-curve or
// identity point is rejected before it reaches the token.
func (ka *ecdhKA) SharedSecret(peer []byte) ([]byte, error) {
	curve, _, _ := curveOf(ka.alg)
	if _, err := curve.NewPublicKey(peer); err != nil {
		return nil, fmt.Errorf("pkcs11: %s: bad peer public key: %w", ka.alg.Name, err)
	}
	k := ka.keys
	t := k.tok
	if err := t.p.enter("derive ECDH secret", ka.alg.Name); err != nil {
		return nil, err
	}
	defer t.p.exit()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done {
		return nil, errors.New("pkcs11: ECDH key pair already used or closed")
	}
	a := t.p.api
	var secret []byte
	ctx, cancel := t.p.deadline(context.Background())
	defer cancel()
	err := t.do(ctx, "derive ECDH secret", ka.alg.Name, func(h pkcs11.SessionHandle) error {
		if k.gen != t.p.mod.gen.Load() || k.epoch != k.tokEpoch() {
			return &Error{Op: "derive ECDH secret", Token: t.label(), Class: ClassOther,
				Err: errors.New("the ephemeral key was lost with the token's sessions; start a new key exchange")}
		}
		params := pkcs11.NewECDH1DeriveParams(pkcs11.CKD_NULL, nil, peer)
		derived, err := a.DeriveKey(h, []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_ECDH1_DERIVE, params)}, k.priv,
			[]*pkcs11.Attribute{
				pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_SECRET_KEY),
				pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_GENERIC_SECRET),
				pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false),
				pkcs11.NewAttribute(pkcs11.CKA_SENSITIVE, false),
				pkcs11.NewAttribute(pkcs11.CKA_EXTRACTABLE, true),
				pkcs11.NewAttribute(pkcs11.CKA_VALUE_LEN, ka.alg.SharedSize),
			})
		if err != nil {
			return err
		}
		attrs, err := a.GetAttributeValue(h, derived, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_VALUE, nil)})
		_ = a.DestroyObject(h, derived)
		if err != nil {
			return err
		}
		secret = attrs[0].Value
		return nil
	})
	k.destroyLocked()
	if err != nil {
		return nil, err
	}
	if len(secret) != ka.alg.SharedSize {
		return nil, fmt.Errorf("pkcs11: %s: token derived %d bytes, want %d", ka.alg.Name, len(secret), ka.alg.SharedSize)
	}
	return secret, nil
}

// Close destroys the ephemeral key pair if SharedSecret has not.
func (ka *ecdhKA) Close() error {
	ka.keys.destroy()
	return nil
}

func (k *ecdhKeys) destroy() {
	c := k.tok.p
	if !c.gate.enter() {
		return // the session objects went with the provider's sessions
	}
	defer c.exit()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.destroyLocked()
}

func (k *ecdhKeys) destroyLocked() {
	if k.done {
		return
	}
	k.done = true
	t := k.tok
	if k.gen != t.p.mod.gen.Load() || k.epoch != k.tokEpoch() {
		return // gone with the sessions of an earlier generation
	}
	_ = t.do(context.Background(), "destroy ECDH key", "", func(h pkcs11.SessionHandle) error {
		_ = t.p.api.DestroyObject(h, k.priv)
		_ = t.p.api.DestroyObject(h, k.pub)
		return nil
	})
}
