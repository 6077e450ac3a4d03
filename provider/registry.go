package provider

import (
	"context"
	"crypto"
	"crypto/cipher"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Registry. The zero value is usable: policy
// "fastest" ranked by provider kind, no calibration, no metrics, logs
// discarded.
type Config struct {
	// Policy is checked as described in the package documentation: an
	// error in it (an unknown algorithm, a pin that is also denied) makes
	// every request of the registry fail with that error until SetPolicy
	// installs a good policy; entries naming providers not registered yet
	// are warnings.
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
//
// Each algorithm is resolved once into a plan — the eligible providers in
// fail-open order, the reason, the provenance of what they build — which
// is rebuilt when a provider is registered or changes, the policy
// changes, or a measurement arrives.
type Registry struct {
	mu        sync.RWMutex
	providers []Provider
	policy    Policy
	policyErr error // Config.Policy was rejected; every request fails with it
	closed    bool

	cal     *Calibrator
	metrics *Metrics
	log     *slog.Logger

	gen   atomic.Uint64 // bumped by every change that invalidates plans
	plans []atomic.Pointer[plan]
}

// New returns an empty registry configured by cfg.
func New(cfg Config) *Registry {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Registry{policy: cfg.Policy, cal: cfg.Calibrator, metrics: cfg.Metrics, log: log,
		plans: make([]atomic.Pointer[plan], len(catalog))}
	err, warns := split(checkPolicy(&cfg.Policy, nil, false))
	if err != nil {
		r.policyErr = fmt.Errorf("provider: Config.Policy refused, nothing will be served until SetPolicy: %w", err)
		log.Error("crypto policy refused", "err", err)
	}
	for _, w := range warns {
		log.Debug("crypto policy", "warning", w)
	}
	r.metrics.attach(r)
	return r
}

// Register adds p. Names must be unique. It fails, leaving p to the
// caller, when the registry is closed (ErrClosed) or when the policy in
// force refuses p: a pin naming p for an algorithm p cannot serve, or a
// pin that a deny entry now matching p takes away.
func (r *Registry) Register(p Provider) error {
	if p == nil {
		return errors.New("provider: Register(nil)")
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		// A constructor's result whose error was not checked.
		return fmt.Errorf("provider: Register of a nil %T (did opening it fail?)", p)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fmt.Errorf("provider: register %s: registry %w", p.Name(), ErrClosed)
	}
	for _, q := range r.providers {
		if q.Name() == p.Name() {
			r.mu.Unlock()
			return fmt.Errorf("provider: %q is already registered", p.Name())
		}
	}
	ps := append(slices.Clip(r.providers), p)
	err, warns := split(checkPolicy(&r.policy, ps, false))
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("provider: register %s: %w", p.Name(), err)
	}
	r.providers = ps
	r.gen.Add(1)
	r.mu.Unlock()
	for _, w := range warns {
		r.log.Debug("crypto policy", "warning", w)
	}
	if n, ok := p.(ChangeNotifier); ok {
		n.NotifyChange(r.changed)
	}
	return nil
}

// changed makes every plan be built again.
func (r *Registry) changed() { r.gen.Add(1) }

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

// SetPolicy replaces the policy after checking it against the registered
// providers (see the package documentation); an entry naming a provider
// that is not registered is an error here.
func (r *Registry) SetPolicy(p Policy) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errRegistryClosed
	}
	err, warns := split(checkPolicy(&p, r.providers, true))
	if err != nil {
		return err
	}
	for _, w := range warns {
		r.log.Warn("crypto policy", "warning", w)
	}
	r.policy, r.policyErr = p, nil
	r.gen.Add(1)
	return nil
}

// Validate checks the policy in force against the providers registered
// now, as SetPolicy would, and returns the warnings (entries that do not
// take effect yet) and the errors.
func (r *Registry) Validate() (warnings []string, err error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	err, warnings = split(checkPolicy(&r.policy, r.providers, true))
	return warnings, err
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

// PoolStats returns the session pools of the providers that have them.
func (r *Registry) PoolStats() []PoolStats {
	var out []PoolStats
	for _, p := range r.Providers() {
		if pr, ok := p.(PoolReporter); ok {
			out = append(out, pr.PoolStats()...)
		}
	}
	return out
}

// Close closes every provider, the last registered first, and returns
// their errors. Afterwards every request fails with ErrClosed; primitives
// already handed out are left to their providers (see the package
// documentation on shutdown). Close may be called more than once.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	ps := r.providers
	r.providers = nil
	r.gen.Add(1)
	r.mu.Unlock()
	r.metrics.detach(r)
	var errs []error
	for i := len(ps) - 1; i >= 0; i-- {
		if err := ps[i].Close(); err != nil {
			errs = append(errs, prefixed(ps[i].Name(), err))
		}
	}
	return errors.Join(errs...)
}

// prefixed puts the provider's name before err unless err already starts
// with it (a PKCS #11 error starts with "pkcs11:").
func prefixed(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+":") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// opFor is the operation a family's primitive needs.
func opFor(f Family) Op {
	switch f {
	case FamilyAEAD:
		return OpSeal | OpOpen
	case FamilyStream, FamilyKeyStream, FamilyBlock:
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

// build tries the plan's providers for alg in order, calling make on each
// until one succeeds. Unless the policy is strict, a failing provider is
// logged and the next one tried: bulk crypto and key agreement fail open.
func build[T any](r *Registry, alg *Algorithm, make func(Provider) (T, error)) (T, *source, error) {
	var zero T
	pl, err := r.plan(alg)
	if err != nil {
		return zero, nil, err
	}
	strict := r.Policy().Strict
	var errs []error
	for i, p := range pl.ranked {
		v, err := make(p)
		if err == nil {
			return v, pl.sources[i], nil
		}
		errs = append(errs, prefixed(p.Name(), err))
		if strict || i == len(pl.ranked)-1 {
			break
		}
		r.log.Warn("provider failed, trying the next", "algorithm", alg.Name, "provider", p.Name(),
			"next", pl.ranked[i+1].Name(), "err", err)
	}
	return zero, nil, fmt.Errorf("provider: %s: %w", alg.Name, errors.Join(errs...))
}

func unsupported(p Provider, alg *Algorithm) error {
	return &UnsupportedError{Provider: p.Name(), Algorithm: alg.Name}
}

// AEAD returns an AEAD for alg keyed with key from the chosen provider.
// It implements FallibleAEAD and Provenancer; release it with Release.
func (r *Registry) AEAD(name string, key []byte) (cipher.AEAD, error) {
	alg, err := lookupFamily(name, FamilyAEAD)
	if err != nil {
		return nil, err
	}
	if err := checkKey(alg, key); err != nil {
		return nil, err
	}
	a, src, err := build(r, alg, func(p Provider) (cipher.AEAD, error) {
		if ap, ok := p.(AEADProvider); ok {
			return ap.NewAEAD(alg, key)
		}
		return nil, unsupported(p, alg)
	})
	if err != nil {
		return nil, err
	}
	return &servedAEAD{AEAD: a, src: src, seal: src.counter(OpSeal), open: src.counter(OpOpen)}, nil
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
	s, src, err := build(r, alg, func(p Provider) (cipher.Stream, error) {
		if sp, ok := p.(StreamProvider); ok {
			return sp.NewStream(alg, key, iv)
		}
		return nil, unsupported(p, alg)
	})
	if err != nil {
		return nil, err
	}
	return &servedStream{Stream: s, src: src, c: src.counter(OpEncrypt)}, nil
}

// Block returns a block cipher (AES, 3DES) for alg, for a mode the caller
// runs (CBC). Release it with Release.
func (r *Registry) Block(name string, key []byte) (cipher.Block, error) {
	alg, err := lookupFamily(name, FamilyBlock)
	if err != nil {
		return nil, err
	}
	if err := checkKey(alg, key); err != nil {
		return nil, err
	}
	b, src, err := build(r, alg, func(p Provider) (cipher.Block, error) {
		if bp, ok := p.(BlockProvider); ok {
			return bp.NewBlock(alg, key)
		}
		return nil, unsupported(p, alg)
	})
	if err != nil {
		return nil, err
	}
	return &servedBlock{Block: b, src: src, c: src.counter(OpEncrypt)}, nil
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
	ks, src, err := build(r, alg, func(p Provider) (KeyStream, error) {
		if kp, ok := p.(KeyStreamProvider); ok {
			return kp.NewKeyStream(alg, key)
		}
		return nil, unsupported(p, alg)
	})
	if err != nil {
		return nil, err
	}
	return &servedKeyStream{KeyStream: ks, src: src, c: src.counter(OpEncrypt)}, nil
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
	h, src, err := build(r, alg, func(p Provider) (hash.Hash, error) {
		if mp, ok := p.(MACProvider); ok {
			return mp.NewMAC(alg, key)
		}
		return nil, unsupported(p, alg)
	})
	if err != nil {
		return nil, err
	}
	return &servedHash{Hash: h, src: src}, nil
}

// OneTimeMAC returns a one-time authenticator (Poly1305).
func (r *Registry) OneTimeMAC(name string) (OneTimeMAC, error) {
	alg, err := lookupFamily(name, FamilyOneTimeMAC)
	if err != nil {
		return nil, err
	}
	m, src, err := build(r, alg, func(p Provider) (OneTimeMAC, error) {
		if op, ok := p.(OneTimeMACProvider); ok {
			return op.NewOneTimeMAC(alg)
		}
		return nil, unsupported(p, alg)
	})
	if err != nil {
		return nil, err
	}
	return &servedOneTimeMAC{OneTimeMAC: m, src: src}, nil
}

// Hash returns a hash for alg.
func (r *Registry) Hash(name string) (hash.Hash, error) {
	alg, err := lookupFamily(name, FamilyHash)
	if err != nil {
		return nil, err
	}
	h, src, err := build(r, alg, func(p Provider) (hash.Hash, error) {
		if hp, ok := p.(HashProvider); ok {
			return hp.NewHash(alg)
		}
		return nil, unsupported(p, alg)
	})
	if err != nil {
		return nil, err
	}
	return &servedHash{Hash: h, src: src}, nil
}

// KeyAgreement returns a fresh ephemeral key pair for alg.
func (r *Registry) KeyAgreement(name string) (KeyAgreement, error) {
	return r.KeyAgreementContext(context.Background(), name)
}

// KeyAgreementContext is KeyAgreement for providers that may wait (a
// token's session pool): ctx bounds the wait when the provider
// implements KeyAgreementContextProvider.
func (r *Registry) KeyAgreementContext(ctx context.Context, name string) (KeyAgreement, error) {
	alg, err := lookupFamily(name, FamilyKeyAgreement)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("provider: key agreement %s: %w", name, err)
	}
	var start time.Time
	ka, src, err := build(r, alg, func(p Provider) (KeyAgreement, error) {
		start = time.Now()
		if kp, ok := p.(KeyAgreementContextProvider); ok {
			return kp.NewKeyAgreementContext(ctx, alg)
		}
		if kp, ok := p.(KeyAgreementProvider); ok {
			return kp.NewKeyAgreement(alg)
		}
		return nil, unsupported(p, alg)
	})
	if err != nil {
		return nil, err
	}
	src.counter(OpGenerate).timed(start, 0, nil)
	return &servedKeyAgreement{KeyAgreement: ka, src: src, c: src.counter(OpDerive)}, nil
}

// Encapsulate runs the sending side of a KEM against encapsulationKey.
func (r *Registry) Encapsulate(name string, encapsulationKey []byte) (shared, ciphertext []byte, err error) {
	shared, ciphertext, _, err = r.EncapsulateProvenance(name, encapsulationKey)
	return shared, ciphertext, err
}

// EncapsulateProvenance is Encapsulate that also says which provider did
// it (a fallback included), since it hands out no primitive to ask.
func (r *Registry) EncapsulateProvenance(name string, encapsulationKey []byte) (shared, ciphertext []byte, pv Provenance, err error) {
	alg, err := lookupFamily(name, FamilyKEM)
	if err != nil {
		return nil, nil, pv, err
	}
	if len(encapsulationKey) != alg.PublicKeySize {
		return nil, nil, pv, fmt.Errorf("provider: %s encapsulation key is %d bytes, want %d", name, len(encapsulationKey), alg.PublicKeySize)
	}
	start := time.Now()
	out, src, err := build(r, alg, func(p Provider) ([2][]byte, error) {
		kp, ok := p.(KEMProvider)
		if !ok {
			return [2][]byte{}, unsupported(p, alg)
		}
		s, c, err := kp.Encapsulate(alg, encapsulationKey)
		return [2][]byte{s, c}, err
	})
	if err != nil {
		return nil, nil, pv, err
	}
	if r.metrics != nil {
		r.metrics.Counter(src.Provider, alg.Name, OpEncapsulate).timed(start, len(encapsulationKey), nil)
	}
	return out[0], out[1], src.provenance(nil), nil
}

// Decapsulator returns a fresh receiving side of a KEM.
func (r *Registry) Decapsulator(name string) (Decapsulator, error) {
	alg, err := lookupFamily(name, FamilyKEM)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	d, src, err := build(r, alg, func(p Provider) (Decapsulator, error) {
		if kp, ok := p.(KEMProvider); ok {
			return kp.NewDecapsulator(alg)
		}
		return nil, unsupported(p, alg)
	})
	if err != nil {
		return nil, err
	}
	src.counter(OpGenerate).timed(start, 0, nil)
	return &servedDecapsulator{Decapsulator: d, src: src, c: src.counter(OpDecapsulate)}, nil
}

// KeyAgreementContextProvider is implemented by key-agreement providers
// whose key generation can wait (a token's session pool).
type KeyAgreementContextProvider interface {
	NewKeyAgreementContext(ctx context.Context, alg *Algorithm) (KeyAgreement, error)
}

// Signer opens the key named by ref ("pkcs11:" URI, "file:" URI or path)
// with the first provider, in policy order, that can reach it. A key that
// lives only in a token fails closed: there is no software fallback.
// The signer implements ContextSigner and Provenancer, and
// crypto.MessageSigner when the provider's does.
func (r *Registry) Signer(ctx context.Context, ref string) (crypto.Signer, error) {
	s, _, err := r.OpenSigner(ctx, ref)
	return s, err
}

// OpenSigner is Signer that also returns the provider holding the key.
func (r *Registry) OpenSigner(ctx context.Context, ref string) (crypto.Signer, Provider, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("provider: open signer %s: %w", RedactRef(ref), err)
	}
	ps, err := r.signerProviders(ref)
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, p := range ps {
		s, err := p.(SignerProvider).Signer(ctx, ref)
		if err == nil {
			src := &source{Provenance: Provenance{Provider: p.Name(), Kind: p.Kind(), Reason: "holds the key"}}
			if alg := SignatureAlgorithm(s.Public(), nil); alg != nil {
				src.Algorithm = alg.Name
			}
			return wrapSigner(s, src, r.metrics), p, nil
		}
		errs = append(errs, prefixed(p.Name(), err))
	}
	if len(errs) == 0 {
		return nil, nil, &NoProviderError{Algorithm: "signer", Reason: fmt.Sprintf("no provider can open %s", RedactRef(ref))}
	}
	err = errors.Join(errs...)
	if red := RedactRef(ref); !strings.Contains(err.Error(), red) {
		return nil, nil, fmt.Errorf("provider: open signer %s: %w", red, err)
	}
	return nil, nil, fmt.Errorf("provider: open signer: %w", err)
}

func (r *Registry) signerProviders(ref string) ([]Provider, error) {
	r.mu.RLock()
	pol, all, closed, perr := r.policy, r.providers, r.closed, r.policyErr
	r.mu.RUnlock()
	switch {
	case closed:
		return nil, errRegistryClosed
	case perr != nil:
		return nil, perr
	}
	var out []Provider
	for _, p := range all {
		p = pol.without("", p)
		sp, ok := p.(SignerProvider)
		if ok && sp.CanOpen(ref) {
			if _, denied := pol.denies("", p); !denied {
				out = append(out, p)
			}
		}
	}
	sortByKind(out, pol.Mode)
	return out, nil
}

// Verify checks sig over input (a digest, or the message for Ed25519)
// with the first provider, in kind order, that verifies the algorithm
// (VerifyProvider), or Go's standard library; it is counted in metrics.
func (r *Registry) Verify(pub crypto.PublicKey, name string, input, sig []byte, opts crypto.SignerOpts) error {
	alg, err := lookupFamily(name, FamilySignature)
	if err != nil {
		return err
	}
	var vp VerifyProvider
	who := "go"
	r.mu.RLock()
	pol, closed := r.policy, r.closed
	ps := append([]Provider(nil), r.providers...)
	r.mu.RUnlock()
	if closed {
		return errRegistryClosed
	}
	sortByKind(ps, pol.Mode)
	for _, p := range ps {
		if v, ok := p.(VerifyProvider); ok && Supports(p, name, OpVerify) {
			if _, denied := pol.denies(name, p); !denied && pol.allowsKind(p.Kind()) {
				vp, who = v, p.Name()
				break
			}
		}
	}
	start := time.Now()
	if vp != nil {
		err = vp.Verify(alg, pub, input, sig, opts)
	} else {
		err = Verify(pub, alg, input, sig, opts)
	}
	if r.metrics != nil {
		r.metrics.Counter(who, name, OpVerify).timed(start, len(input), err)
	}
	return err
}

// VerifyProvider verifies signatures (OpVerify).
type VerifyProvider interface {
	Verify(alg *Algorithm, pub crypto.PublicKey, input, sig []byte, opts crypto.SignerOpts) error
}
