//go:build cgo && !nopkcs11

package pkcs11

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"github.com/offload/offload/providers/pkcs11/uri"
	"io"
	"math/big"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/provider"
	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"
)

// handleCache is a key's object handle, valid for one token epoch and one
// module generation: after a reattach or reinitialization the handle may
// name another object, so the key is found again and checked.
type handleCache struct {
	h     pkcs11.ObjectHandle
	epoch uint64
	gen   uint64
}

// signer is a private key on a token. It implements crypto.Signer,
// crypto.MessageSigner and io.Closer.
type signer struct {
	p         *Provider
	tok       *token
	ref       *uri.URI // the key's id and label, to find it again
	sel       *uri.URI // the id and/or label the key was asked for, to find it on a failover token
	what      string
	pub       crypto.PublicKey
	kt        KeyType
	ephemeral bool
	mech      []*pkcs11.Mechanism // for parameterless mechanisms

	cache   atomic.Pointer[handleCache]
	foCache atomic.Pointer[handleCache]
	foOnce  sync.Once
	onFO    atomic.Bool // the last signature was made on the failover token
	closed  *atomic.Bool
	eph     ephemeralKey // for ephemeral key pairs

	// units are the tokens the key signs on: tok first (its cache is
	// cache), then tok's peers. A signature goes to the least busy.
	units []*signUnit
	turn  atomic.Uint32 // rotates among units equally busy
	last  atomic.Int32  // the unit of the last signature
}

// signUnit is one token a signer signs on, with the key's handle there.
type signUnit struct {
	tok   *token
	cache *atomic.Pointer[handleCache]
	sel   *uri.URI    // how the key is found again there
	wrong atomic.Bool // holds another key under the name: never used
	once  sync.Once   // says so once
}

var (
	_ crypto.Signer          = (*signer)(nil)
	_ crypto.MessageSigner   = (*signer)(nil)
	_ provider.ContextSigner = (*signer)(nil)
	_ provider.Provenancer   = (*signer)(nil)
	_ io.Closer              = (*signer)(nil)
)

func (p *Provider) newSigner(t *token, sel *uri.URI, k *keyRef, ephemeral bool) *signer {
	s := &signer{p: p, tok: t, ref: &uri.URI{ID: k.id, Object: k.label}, pub: k.pub, kt: k.kt, ephemeral: ephemeral,
		closed: new(atomic.Bool)}
	if len(k.id) == 0 {
		s.ref.ID = nil
	}
	s.sel = &uri.URI{ID: sel.ID, Object: sel.Object}
	if !s.sel.HasObject() {
		s.sel = s.ref
	}
	_, _, d := t.state()
	u := d.URI()
	u.Object, u.ID = s.ref.Object, s.ref.ID
	s.what = u.String()
	switch s.kt {
	case Ed25519:
		s.mech = []*pkcs11.Mechanism{pkcs11.NewMechanism(ckmEDDSA, nil)}
	case ECDSAP256, ECDSAP384:
		s.mech = []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_ECDSA, nil)}
	default:
		s.mech = []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_RSA_PKCS, nil)}
	}
	s.cache.Store(&handleCache{h: k.priv, epoch: s.epochOf(t), gen: p.c.mod.gen.Load()})
	s.units = []*signUnit{{tok: t, cache: &s.cache, sel: s.ref}}
	if !ephemeral {
		for _, peer := range t.peers {
			s.units = append(s.units, &signUnit{tok: peer, cache: new(atomic.Pointer[handleCache]), sel: s.sel})
		}
	}
	if ephemeral {
		s.eph = ephemeralKey{p: p, tok: t, ref: s.ref, what: s.what, done: s.closed}
		runtime.AddCleanup(s, func(e ephemeralKey) { e.destroy() }, s.eph)
	}
	return s
}

func (s *signer) epochOf(t *token) uint64 {
	_, e, _ := t.state()
	return e
}

// openSigner finds the key a URI names among the provider's tokens.
func (p *Provider) openSigner(ctx context.Context, ref string) (crypto.Signer, error) {
	u, err := uri.Parse(ref)
	if err != nil {
		return nil, err
	}
	s, err := p.openSignerURI(ctx, u)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (p *Provider) openSignerURI(ctx context.Context, u *uri.URI) (*signer, error) {
	if m := u.Module(); m != "" && !sameModule(m, p.c.mod.path) {
		return nil, fmt.Errorf("pkcs11: key %s is in module %s, not in this provider's %s", u, m, p.c.mod.path)
	}
	if u.Type != "" && u.Type != "private" {
		return nil, fmt.Errorf("pkcs11: %q: a signer needs a private key, not type=%s", u, u.Type)
	}
	if !u.HasObject() {
		return nil, fmt.Errorf("pkcs11: %q names no key: give object= (a label) and/or id=", u)
	}
	candidates := p.tokensFor(u)
	// A failover token holds copies of its primary's keys, and peers hold
	// copies of each other's: not a second match. The first of a group
	// of peers (in the provider's order) is where the key is looked for.
	primaries := candidates[:0:0]
	for _, t := range candidates {
		shadow := false
		for _, o := range candidates {
			if o.failover == t {
				shadow = true
			}
		}
		for _, o := range primaries {
			if slices.Contains(o.peers, t) {
				shadow = true
			}
		}
		if !shadow {
			primaries = append(primaries, t)
		}
	}
	if len(primaries) == 0 {
		return nil, &Error{Op: "open key", What: u.String(), Class: ClassNotFound,
			Err: fmt.Errorf("%w: no token of this provider matches (tokens: %s)", ErrNotFound, describeAll(p.Tokens()))}
	}
	type hit struct {
		t *token
		k *keyRef
	}
	var hits []hit
	var errs []error
	for _, t := range primaries {
		var k *keyRef
		err := t.do(ctx, "open key", u.String(), func(h pkcs11.SessionHandle) error {
			var err error
			k, err = findKey(p.c.api, h, u, t.label())
			return err
		})
		if err == nil {
			hits = append(hits, hit{t, k})
		} else if len(primaries) == 1 || !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	switch {
	case len(hits) > 1:
		var descs []uri.TokenInfo
		for _, h := range hits {
			_, _, d := h.t.state()
			descs = append(descs, d)
		}
		return nil, &Error{Op: "open key", What: u.String(), Class: ClassOther,
			Err: fmt.Errorf("%w: the key is on %d tokens (%s); add token= or serial=", ErrAmbiguous, len(hits), describeAll(descs))}
	case len(hits) == 0 && len(errs) == 0:
		return nil, &Error{Op: "open key", What: u.String(), Class: ClassNotFound,
			Err: fmt.Errorf("%w: no private key with this id/label on %d tokens", ErrNotFound, len(primaries))}
	case len(hits) == 0:
		return nil, failClosed(errors.Join(errs...))
	}
	return p.newSigner(hits[0].t, u, hits[0].k, false), nil
}

// errDifferentKey: a token holds another key under the signer's name.
var errDifferentKey = errors.New("the key now on the token under this id/label is a different key (public keys differ); refusing to sign with it")

// failClosed explains that a token key has no fallback.
func failClosed(err error) error {
	if ClassOf(err) != ClassDevice {
		return err
	}
	return fmt.Errorf("%w (the key lives only in the token: there is no software fallback)", err)
}

// Public returns the public key.
func (s *signer) Public() crypto.PublicKey { return s.pub }

// KeyType returns the kind of key.
func (s *signer) KeyType() KeyType { return s.kt }

// URI names the key (token, label and id; no module or PIN).
func (s *signer) URI() string { return s.what }

// Sign signs digest with the key on the token: Ed25519 signs the message
// itself (opts.HashFunc() must be 0), ECDSA returns ASN.1 from the token's
// r‖s, RSA signs PKCS #1 v1.5 or, with *rsa.PSSOptions, PSS.
// crypto.Signer.Sign takes no context: the wait for a session, retries
// and recovery are bounded by Config.Deadline. Use SignContext to bound
// them by a context of your own.
func (s *signer) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return s.SignContext(context.Background(), rand, digest, opts)
}

// SignContext is Sign bounded by ctx as well as by Config.Deadline.
func (s *signer) SignContext(ctx context.Context, _ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if err := s.p.c.enter("sign", s.what); err != nil {
		return nil, err
	}
	defer s.p.c.exit()
	if opts == nil {
		opts = crypto.Hash(0)
	}
	mech, data, err := s.prepare(digest, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.p.c.deadline(ctx)
	defer cancel()
	sig, err := s.signRaw(ctx, mech, data)
	if err != nil {
		return nil, err
	}
	if s.kt == ECDSAP256 || s.kt == ECDSAP384 {
		return ecdsaASN1(sig)
	}
	return sig, nil
}

// SignMessage hashes msg with opts.HashFunc() (Ed25519: signs it as is)
// and signs it, for crypto.MessageSigner.
func (s *signer) SignMessage(rand io.Reader, msg []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts == nil {
		opts = crypto.Hash(0)
	}
	if s.kt == Ed25519 || opts.HashFunc() == 0 {
		return s.Sign(rand, msg, opts)
	}
	if !opts.HashFunc().Available() {
		return nil, fmt.Errorf("pkcs11: hash %v is not available", opts.HashFunc())
	}
	h := opts.HashFunc().New()
	h.Write(msg)
	return s.Sign(rand, h.Sum(nil), opts)
}

// Provenance says which token holds the key, and whether the last
// signature was made on its failover token.
func (s *signer) Provenance() provider.Provenance {
	t := s.units[s.last.Load()].tok
	pv := provider.Provenance{Provider: s.p.name, Kind: provider.KindHardware}
	if len(s.units) > 1 {
		pv.Detail = fmt.Sprintf("signing on the least busy of %d tokens", len(s.units))
	}
	if s.onFO.Load() && s.tok.failover != nil {
		t = s.tok
		pv.Fallback, pv.FallbackFrom = true, fmt.Sprintf("token %q", t.label())
		pv.Detail = "signing on the failover token"
		t = t.failover
	}
	slot, _, d := t.state()
	pv.Token, pv.Serial, pv.Slot = d.Label, d.Serial, slot
	if alg := provider.SignatureAlgorithm(s.pub, nil); alg != nil {
		pv.Algorithm = alg.Name
	}
	return pv
}

func (s *signer) prepare(digest []byte, opts crypto.SignerOpts) ([]*pkcs11.Mechanism, []byte, error) {
	hash := opts.HashFunc()
	switch s.kt {
	case Ed25519:
		if o, ok := opts.(*ed25519.Options); ok && o.Context != "" {
			return nil, nil, errors.New("pkcs11: Ed25519ctx is not supported, only pure Ed25519")
		}
		if hash != 0 {
			return nil, nil, errors.New("pkcs11: Ed25519 signs the message itself: opts.HashFunc() must be 0 (Ed25519ph is not supported)")
		}
		return s.mech, digest, nil
	case ECDSAP256, ECDSAP384:
		if hash != 0 && len(digest) != hash.Size() {
			return nil, nil, fmt.Errorf("pkcs11: digest is %d bytes, %v wants %d", len(digest), hash, hash.Size())
		}
		return s.mech, digest, nil
	}
	if hash != 0 && len(digest) != hash.Size() {
		return nil, nil, fmt.Errorf("pkcs11: digest is %d bytes, %v wants %d", len(digest), hash, hash.Size())
	}
	if pss, ok := opts.(*rsa.PSSOptions); ok {
		hm, mgf, ok := pssHash(hash)
		if !ok {
			return nil, nil, fmt.Errorf("pkcs11: RSA-PSS with hash %v is not supported", hash)
		}
		pub := s.pub.(*rsa.PublicKey)
		emLen := (pub.N.BitLen() - 1 + 7) / 8
		salt := pss.SaltLength
		switch salt {
		case rsa.PSSSaltLengthAuto:
			salt = emLen - 2 - hash.Size()
		case rsa.PSSSaltLengthEqualsHash:
			salt = hash.Size()
		}
		if salt < 0 || salt > emLen-2-hash.Size() {
			return nil, nil, fmt.Errorf("pkcs11: RSA-PSS salt length %d does not fit a %d-bit key", pss.SaltLength, pub.N.BitLen())
		}
		params := pkcs11.NewPSSParams(hm, mgf, uint(salt))
		return []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_RSA_PKCS_PSS, params)}, digest, nil
	}
	prefix, ok := digestInfoPrefix[hash]
	if !ok {
		return nil, nil, fmt.Errorf("pkcs11: RSA PKCS #1 v1.5 with hash %v is not supported", hash)
	}
	data := make([]byte, 0, len(prefix)+len(digest))
	return s.mech, append(append(data, prefix...), digest...), nil
}

// signRaw runs the token's signing mechanism on the least busy of the
// key's units (its token and that token's peers), skipping a unit that
// fails or is exhausted, then failing over to the failover token when
// the key's token is lost. Without either, a lost token is an error: the
// key lives only there.
func (s *signer) signRaw(ctx context.Context, mech []*pkcs11.Mechanism, data []byte) ([]byte, error) {
	if s.closed.Load() {
		return nil, &Error{Op: "sign", What: s.what, Class: ClassClosed, Err: fmt.Errorf("signer %w", ErrClosed)}
	}
	var err error
	for _, i := range s.order() {
		u := s.units[i]
		sig, uerr := s.signOn(ctx, u.tok, u.cache, u.sel, mech, data)
		if uerr == nil {
			s.last.Store(int32(i))
			s.onFO.Store(false)
			return sig, nil
		}
		if i > 0 {
			uerr = fmt.Errorf("peer token %q: %w", u.tok.label(), uerr)
		}
		err = errors.Join(err, uerr)
		switch {
		case errors.Is(uerr, errDifferentKey):
			u.wrong.Store(true)
			u.once.Do(func() {
				s.p.c.log.Error("a peer token holds a different key under this name; it will not sign", "key", s.what, "token", u.tok.label())
			})
		case ClassOf(uerr) != ClassDevice && ClassOf(uerr) != ClassBusy:
			return nil, failClosed(err)
		}
	}
	if fo := s.tok.failover; fo != nil && !s.ephemeral && ClassOf(err) == ClassDevice {
		sig, ferr := s.signOn(ctx, fo, &s.foCache, s.sel, mech, data)
		if ferr == nil {
			s.onFO.Store(true)
			s.foOnce.Do(func() {
				s.p.c.log.Warn("signing on the failover token", "key", s.what, "token", s.tok.label(), "failover", fo.label(), "err", err)
			})
			return sig, nil
		}
		err = errors.Join(err, fmt.Errorf("failover token %q: %w", fo.label(), ferr))
	}
	if err == nil {
		err = &Error{Op: "sign", What: s.what, Class: ClassOther, Err: errDifferentKey}
	}
	return nil, failClosed(err)
}

// order returns the units to try, least busy first: fewest sessions in
// use, ties taken in turn; tokens that are down, last; units holding
// another key, never.
func (s *signer) order() []int {
	if len(s.units) == 1 {
		return []int{0}
	}
	n := len(s.units)
	start := int(s.turn.Add(1))
	out := make([]int, 0, n)
	for k := range n {
		if i := (start + k) % n; !s.units[i].wrong.Load() {
			out = append(out, i)
		}
	}
	rank := func(i int) int {
		t := s.units[i].tok
		if t.usable() != nil {
			return 1 << 20
		}
		return t.inUse()
	}
	slices.SortStableFunc(out, func(a, b int) int { return rank(a) - rank(b) })
	return out
}

func (s *signer) signOn(ctx context.Context, t *token, cache *atomic.Pointer[handleCache], sel *uri.URI, mech []*pkcs11.Mechanism, data []byte) ([]byte, error) {
	var sig []byte
	a := s.p.c.api
	err := t.do(ctx, "sign", s.what, func(h pkcs11.SessionHandle) error {
		obj, err := s.handle(t, cache, sel, h)
		if err != nil {
			return err
		}
		if err := a.SignInit(h, mech, obj); err != nil {
			if classify(err) == ClassHandle {
				cache.Store(nil)
			}
			return err
		}
		sig, err = a.Sign(h, data)
		return err
	})
	return sig, err
}

// handle returns the key's object handle on t, finding the key again (and
// checking it is the same key) when the cached handle is from an earlier
// epoch or generation.
func (s *signer) handle(t *token, cache *atomic.Pointer[handleCache], sel *uri.URI, h pkcs11.SessionHandle) (pkcs11.ObjectHandle, error) {
	epoch, gen := s.epochOf(t), s.p.c.mod.gen.Load()
	if c := cache.Load(); c != nil && c.epoch == epoch && c.gen == gen {
		return c.h, nil
	}
	k, err := findKey(s.p.c.api, h, sel, t.label())
	if err != nil {
		return 0, err
	}
	if !samePublic(k.pub, s.pub) {
		return 0, &Error{Op: "sign", Token: t.label(), What: s.what, Class: ClassOther, Err: errDifferentKey}
	}
	cache.Store(&handleCache{h: k.priv, epoch: epoch, gen: gen})
	return k.priv, nil
}

func samePublic(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

// Close destroys a session key pair (from GenerateSigner with no URI);
// for token keys it only stops further use of this signer.
func (s *signer) Close() error {
	if !s.ephemeral {
		s.closed.Store(true)
		return nil
	}
	return s.eph.destroy()
}

// ephemeralKey is what destroys an ephemeral key pair, on Close or, for
// a signer dropped without Close, when it is collected.
type ephemeralKey struct {
	p    *Provider
	tok  *token
	ref  *uri.URI
	what string
	done *atomic.Bool // the signer's closed flag
}

func (e ephemeralKey) destroy() error {
	if e.done.Swap(true) {
		return nil
	}
	if !e.p.c.gate.enter() {
		return nil // session objects went with the provider's sessions
	}
	defer e.p.c.exit()
	a := e.p.c.api
	return e.tok.do(context.Background(), "destroy ephemeral key", e.what, func(h pkcs11.SessionHandle) error {
		for _, class := range []uint{pkcs11.CKO_PRIVATE_KEY, pkcs11.CKO_PUBLIC_KEY} {
			objs, err := findObjects(a, h, keyTemplate(class, e.ref), 4)
			if err != nil {
				return err
			}
			for _, o := range objs {
				_ = a.DestroyObject(h, o)
			}
		}
		return nil
	})
}

// ecdsaASN1 turns the token's r‖s into the ASN.1 SEQUENCE crypto.Signer returns.
func ecdsaASN1(sig []byte) ([]byte, error) {
	if len(sig) == 0 || len(sig)%2 != 0 {
		return nil, fmt.Errorf("pkcs11: token returned a malformed ECDSA signature (%d bytes)", len(sig))
	}
	r := new(big.Int).SetBytes(sig[:len(sig)/2])
	sv := new(big.Int).SetBytes(sig[len(sig)/2:])
	var b cryptobyte.Builder
	b.AddASN1(asn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1BigInt(r)
		b.AddASN1BigInt(sv)
	})
	return b.Bytes()
}

func pssHash(h crypto.Hash) (hashMech, mgf uint, ok bool) {
	switch h {
	case crypto.SHA1:
		return pkcs11.CKM_SHA_1, pkcs11.CKG_MGF1_SHA1, true
	case crypto.SHA224:
		return pkcs11.CKM_SHA224, pkcs11.CKG_MGF1_SHA224, true
	case crypto.SHA256:
		return pkcs11.CKM_SHA256, pkcs11.CKG_MGF1_SHA256, true
	case crypto.SHA384:
		return pkcs11.CKM_SHA384, pkcs11.CKG_MGF1_SHA384, true
	case crypto.SHA512:
		return pkcs11.CKM_SHA512, pkcs11.CKG_MGF1_SHA512, true
	}
	return 0, 0, false
}

// digestInfoPrefix is the DER DigestInfo header PKCS #1 v1.5 puts before
// the digest (hash 0: the data is signed as given, as rsa.SignPKCS1v15 does).
var digestInfoPrefix = map[crypto.Hash][]byte{
	0:             {},
	crypto.SHA1:   {0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14},
	crypto.SHA224: {0x30, 0x2d, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x04, 0x05, 0x00, 0x04, 0x1c},
	crypto.SHA256: {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20},
	crypto.SHA384: {0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30},
	crypto.SHA512: {0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40},
}

var _ = ecdsa.Verify
