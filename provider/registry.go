package provider

import (
	"context"
	"crypto"
	"crypto/cipher"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"sync"
)

// Config configures a Registry. The zero value is usable: policy
// "fastest" ranked by provider kind, no calibration, no metrics, logs
// discarded.
type Config struct {
	Policy Policy
	// Calibrator, when set, measures candidates so that ModeFastest ranks
	// them by speed.
	Calibrator *Calibrator
	// Metrics, when set, counts the work of every primitive handed out.
	Metrics *Metrics
	Logger  *slog.Logger
}

// Registry hands out primitives from registered providers, chosen by
// policy and measurement. It is safe for concurrent use. Create one with
// New; there is no package-level registry.
type Registry struct {
	mu        sync.RWMutex
	providers []Provider
	policy    Policy
	cal       *Calibrator
	metrics   *Metrics
	log       *slog.Logger
}

// New returns an empty registry configured by cfg. The policy is checked
// when it is set with SetPolicy, once providers are registered.
func New(cfg Config) *Registry {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{policy: cfg.Policy, cal: cfg.Calibrator, metrics: cfg.Metrics, log: log}
}

// Register adds p. Names must be unique.
func (r *Registry) Register(p Provider) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.providers {
		if q.Name() == p.Name() {
			return fmt.Errorf("provider: %q is already registered", p.Name())
		}
	}
	r.providers = append(r.providers, p)
	return nil
}

// Providers returns the registered providers in registration order.
func (r *Registry) Providers() []Provider {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Provider(nil), r.providers...)
}

// Provider returns the registered provider matching spec (its name, or a
// spec it answers to through Matcher).
func (r *Registry) Provider(spec string) (Provider, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, p := range r.providers {
		if matchesProvider(p, spec) {
			return p, nil
		}
	}
	return nil, &UnknownProviderError{Name: spec}
}

// SetPolicy replaces the policy after checking that every algorithm it
// names is in the catalog and every provider it names is registered.
func (r *Registry) SetPolicy(p Policy) error {
	for alg, spec := range p.Pins {
		if _, err := Lookup(alg); err != nil {
			return &PolicyError{Entry: alg + "=" + spec, Reason: err.Error()}
		}
		if _, err := r.Provider(spec); err != nil {
			return &PolicyError{Entry: alg + "=" + spec, Reason: err.Error()}
		}
	}
	for _, d := range p.Deny {
		if d.Provider == "" {
			continue
		}
		if _, err := r.Provider(d.Provider); err != nil {
			return &PolicyError{Entry: d.String(), Reason: err.Error()}
		}
	}
	r.mu.Lock()
	r.policy = p
	r.mu.Unlock()
	return nil
}

// Policy returns the policy in force.
func (r *Registry) Policy() Policy {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.policy
}

// Calibrator returns the calibrator, or nil.
func (r *Registry) Calibrator() *Calibrator { return r.cal }

// Metrics returns the metrics sink, or nil.
func (r *Registry) Metrics() *Metrics { return r.metrics }

// Close closes every provider and returns the first error.
func (r *Registry) Close() error {
	r.mu.Lock()
	ps := r.providers
	r.providers = nil
	r.mu.Unlock()
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// opFor is the operation a family's primitive needs.
func opFor(f Family) Op {
	switch f {
	case FamilyAEAD:
		return OpSeal | OpOpen
	case FamilyStream, FamilyKeyStream:
		return OpEncrypt
	case FamilyMAC, FamilyOneTimeMAC:
		return OpMAC
	case FamilySignature:
		return OpSign
	case FamilyKeyAgreement:
		return OpDerive
	case FamilyKEM:
		return OpEncapsulate
	case FamilyHash:
		return OpHash
	}
	return 0
}

func lookupFamily(name string, f Family) (*Algorithm, error) {
	alg, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if alg.Family != f {
		return nil, &WrongFamilyError{Algorithm: name, Got: alg.Family, Want: f}
	}
	return alg, nil
}

// build tries the ranked providers for alg in order, calling make on each
// until one succeeds. Unless the policy is strict, a failing provider is
// logged and the next one tried: bulk crypto and key agreement fail open.
func build[T any](r *Registry, alg *Algorithm, make func(Provider) (T, error)) (T, Provider, error) {
	var zero T
	ex, err := r.explain(alg)
	if err != nil {
		return zero, nil, err
	}
	strict := r.Policy().Strict
	var errs []error
	for i, p := range ex.ranked {
		v, err := make(p)
		if err == nil {
			return v, p, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Name(), err))
		if strict || i == len(ex.ranked)-1 {
			break
		}
		r.log.Warn("provider failed, trying the next", "algorithm", alg.Name, "provider", p.Name(),
			"next", ex.ranked[i+1].Name(), "err", err)
	}
	return zero, nil, fmt.Errorf("provider: %s: %w", alg.Name, errors.Join(errs...))
}

// AEAD returns an AEAD for alg keyed with key from the chosen provider.
func (r *Registry) AEAD(name string, key []byte) (cipher.AEAD, error) {
	alg, err := lookupFamily(name, FamilyAEAD)
	if err != nil {
		return nil, err
	}
	if err := checkKey(alg, key); err != nil {
		return nil, err
	}
	a, p, err := build(r, alg, func(p Provider) (cipher.AEAD, error) {
		ap, ok := p.(AEADProvider)
		if !ok {
			return nil, &UnsupportedError{Provider: p.Name(), Algorithm: name}
		}
		return ap.NewAEAD(alg, key)
	})
	if err != nil {
		return nil, err
	}
	return r.metrics.wrapAEAD(p, alg, a), nil
}

// Stream returns a stream cipher (AES-CTR) for alg.
func (r *Registry) Stream(name string, key, iv []byte) (cipher.Stream, error) {
	alg, err := lookupFamily(name, FamilyStream)
	if err != nil {
		return nil, err
	}
	if err := checkKey(alg, key); err != nil {
		return nil, err
	}
	if len(iv) != alg.NonceSize {
		return nil, fmt.Errorf("provider: %s needs a %d-byte IV, got %d bytes", name, alg.NonceSize, len(iv))
	}
	s, p, err := build(r, alg, func(p Provider) (cipher.Stream, error) {
		sp, ok := p.(StreamProvider)
		if !ok {
			return nil, &UnsupportedError{Provider: p.Name(), Algorithm: name}
		}
		return sp.NewStream(alg, key, iv)
	})
	if err != nil {
		return nil, err
	}
	return r.metrics.wrapStream(p, alg, s), nil
}

// KeyStream returns a keystream (ChaCha20 with explicit nonce and counter).
func (r *Registry) KeyStream(name string, key []byte) (KeyStream, error) {
	alg, err := lookupFamily(name, FamilyKeyStream)
	if err != nil {
		return nil, err
	}
	if err := checkKey(alg, key); err != nil {
		return nil, err
	}
	ks, p, err := build(r, alg, func(p Provider) (KeyStream, error) {
		kp, ok := p.(KeyStreamProvider)
		if !ok {
			return nil, &UnsupportedError{Provider: p.Name(), Algorithm: name}
		}
		return kp.NewKeyStream(alg, key)
	})
	if err != nil {
		return nil, err
	}
	return r.metrics.wrapKeyStream(p, alg, ks), nil
}

// MAC returns a keyed hash (HMAC) for alg.
func (r *Registry) MAC(name string, key []byte) (hash.Hash, error) {
	alg, err := lookupFamily(name, FamilyMAC)
	if err != nil {
		return nil, err
	}
	if err := checkKey(alg, key); err != nil {
		return nil, err
	}
	h, _, err := build(r, alg, func(p Provider) (hash.Hash, error) {
		mp, ok := p.(MACProvider)
		if !ok {
			return nil, &UnsupportedError{Provider: p.Name(), Algorithm: name}
		}
		return mp.NewMAC(alg, key)
	})
	return h, err
}

// OneTimeMAC returns a one-time authenticator (Poly1305).
func (r *Registry) OneTimeMAC(name string) (OneTimeMAC, error) {
	alg, err := lookupFamily(name, FamilyOneTimeMAC)
	if err != nil {
		return nil, err
	}
	m, _, err := build(r, alg, func(p Provider) (OneTimeMAC, error) {
		op, ok := p.(OneTimeMACProvider)
		if !ok {
			return nil, &UnsupportedError{Provider: p.Name(), Algorithm: name}
		}
		return op.NewOneTimeMAC(alg)
	})
	return m, err
}

// Hash returns a hash for alg.
func (r *Registry) Hash(name string) (hash.Hash, error) {
	alg, err := lookupFamily(name, FamilyHash)
	if err != nil {
		return nil, err
	}
	h, _, err := build(r, alg, func(p Provider) (hash.Hash, error) {
		hp, ok := p.(HashProvider)
		if !ok {
			return nil, &UnsupportedError{Provider: p.Name(), Algorithm: name}
		}
		return hp.NewHash(alg)
	})
	return h, err
}

// KeyAgreement returns a fresh ephemeral key pair for alg.
func (r *Registry) KeyAgreement(name string) (KeyAgreement, error) {
	alg, err := lookupFamily(name, FamilyKeyAgreement)
	if err != nil {
		return nil, err
	}
	ka, p, err := build(r, alg, func(p Provider) (KeyAgreement, error) {
		kp, ok := p.(KeyAgreementProvider)
		if !ok {
			return nil, &UnsupportedError{Provider: p.Name(), Algorithm: name}
		}
		return kp.NewKeyAgreement(alg)
	})
	if err != nil {
		return nil, err
	}
	r.metrics.count(p, alg, OpDerive, 0, nil)
	return ka, nil
}

// Encapsulate runs the sending side of a KEM against encapsulationKey.
func (r *Registry) Encapsulate(name string, encapsulationKey []byte) (shared, ciphertext []byte, err error) {
	alg, err := lookupFamily(name, FamilyKEM)
	if err != nil {
		return nil, nil, err
	}
	out, _, err := build(r, alg, func(p Provider) ([2][]byte, error) {
		kp, ok := p.(KEMProvider)
		if !ok {
			return [2][]byte{}, &UnsupportedError{Provider: p.Name(), Algorithm: name}
		}
		s, c, err := kp.Encapsulate(alg, encapsulationKey)
		return [2][]byte{s, c}, err
	})
	return out[0], out[1], err
}

// Decapsulator returns a fresh receiving side of a KEM.
func (r *Registry) Decapsulator(name string) (Decapsulator, error) {
	alg, err := lookupFamily(name, FamilyKEM)
	if err != nil {
		return nil, err
	}
	d, _, err := build(r, alg, func(p Provider) (Decapsulator, error) {
		kp, ok := p.(KEMProvider)
		if !ok {
			return nil, &UnsupportedError{Provider: p.Name(), Algorithm: name}
		}
		return kp.NewDecapsulator(alg)
	})
	return d, err
}

// Signer opens the key named by ref ("pkcs11:" URI, "file:" URI or path)
// with the first provider, in policy order, that can reach it. A key that
// lives only in a token fails closed: there is no software fallback.
func (r *Registry) Signer(ctx context.Context, ref string) (crypto.Signer, error) {
	s, _, err := r.OpenSigner(ctx, ref)
	return s, err
}

// OpenSigner is Signer that also returns the provider holding the key.
func (r *Registry) OpenSigner(ctx context.Context, ref string) (crypto.Signer, Provider, error) {
	var errs []error
	for _, p := range r.signerProviders(ref) {
		s, err := p.(SignerProvider).Signer(ctx, ref)
		if err == nil {
			return s, p, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Name(), err))
	}
	if len(errs) == 0 {
		return nil, nil, &NoProviderError{Algorithm: "signer", Reason: fmt.Sprintf("no provider can open %s", RedactRef(ref))}
	}
	return nil, nil, fmt.Errorf("provider: open signer %s: %w", RedactRef(ref), errors.Join(errs...))
}

func (r *Registry) signerProviders(ref string) []Provider {
	pol := r.Policy()
	var out []Provider
	for _, p := range r.Providers() {
		sp, ok := p.(SignerProvider)
		if ok && sp.CanOpen(ref) {
			if _, denied := pol.denies("", p); !denied {
				out = append(out, p)
			}
		}
	}
	sortByKind(out, pol.Mode)
	return out
}
