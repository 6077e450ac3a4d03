//go:build cgo && !nopkcs11

package pkcs11

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/offload/offload/providers/pkcs11/uri"
	"math/big"

	"github.com/miekg/pkcs11"
)

// DER encodings of the curves' object identifiers (CKA_EC_PARAMS).
var (
	oidP256    = []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07}
	oidP384    = []byte{0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22}
	oidEd25519 = []byte{0x06, 0x03, 0x2b, 0x65, 0x70}
	// Some modules name Edwards curves with a PrintableString instead.
	nameEd25519 = append([]byte{0x13, 0x0c}, "edwards25519"...)
)

func ecParams(kt KeyType) []byte {
	switch kt {
	case ECDSAP256:
		return oidP256
	case ECDSAP384:
		return oidP384
	case Ed25519:
		return oidEd25519
	}
	return nil
}

// findObjects returns the handles of objects matching template, at most max.
func findObjects(a api, h pkcs11.SessionHandle, template []*pkcs11.Attribute, max int) ([]pkcs11.ObjectHandle, error) {
	if err := a.FindObjectsInit(h, template); err != nil {
		return nil, err
	}
	objs, _, err := a.FindObjects(h, max)
	if ferr := a.FindObjectsFinal(h); err == nil {
		err = ferr
	}
	return objs, err
}

// keyTemplate selects objects of a class by the URI's id and label.
func keyTemplate(class uint, u *uri.URI) []*pkcs11.Attribute {
	t := []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_CLASS, class)}
	if u.ID != nil {
		t = append(t, pkcs11.NewAttribute(pkcs11.CKA_ID, u.ID))
	}
	if u.Object != "" {
		t = append(t, pkcs11.NewAttribute(pkcs11.CKA_LABEL, u.Object))
	}
	return t
}

// keyRef is what identifies a key pair on a token once it is found.
type keyRef struct {
	priv  pkcs11.ObjectHandle
	id    []byte
	label string
	pub   crypto.PublicKey
	kt    KeyType
	sens  bool
	extr  bool
}

// findKey finds the one private key u names on the session's token and
// reads its public key. No key, or several, is an error naming u.
func findKey(a api, h pkcs11.SessionHandle, u *uri.URI, label string) (*keyRef, error) {
	objs, err := findObjects(a, h, keyTemplate(pkcs11.CKO_PRIVATE_KEY, u), 8)
	if err != nil {
		return nil, wrapErr(err, "find key", label, u.String())
	}
	switch len(objs) {
	case 0:
		return nil, &Error{Op: "find key", Token: label, What: u.String(), Class: ClassNotFound,
			Err: fmt.Errorf("%w: no private key has this id/label", ErrNotFound)}
	case 1:
	default:
		var names []string
		for _, o := range objs {
			if r, err := readKeyAttrs(a, h, o); err == nil {
				names = append(names, (&uri.URI{Object: r.label, ID: r.id}).String())
			}
		}
		return nil, &Error{Op: "find key", Token: label, What: u.String(), Class: ClassOther,
			Err: fmt.Errorf("%w: %d private keys match (%v); name one by id and label", ErrAmbiguous, len(objs), names)}
	}
	r, err := readKeyAttrs(a, h, objs[0])
	if err != nil {
		return nil, wrapErr(err, "read key", label, u.String())
	}
	if r.pub, err = readPublic(a, h, r); err != nil {
		return nil, wrapErr(err, "read public key", label, u.String())
	}
	return r, nil
}

func readKeyAttrs(a api, h pkcs11.SessionHandle, o pkcs11.ObjectHandle) (*keyRef, error) {
	attrs, err := a.GetAttributeValue(h, o, []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, nil),
		pkcs11.NewAttribute(pkcs11.CKA_ID, nil),
		pkcs11.NewAttribute(pkcs11.CKA_LABEL, nil),
		pkcs11.NewAttribute(pkcs11.CKA_SENSITIVE, nil),
		pkcs11.NewAttribute(pkcs11.CKA_EXTRACTABLE, nil),
	})
	if err != nil {
		return nil, err
	}
	r := &keyRef{priv: o}
	var keyType uint
	for _, at := range attrs {
		switch at.Type {
		case pkcs11.CKA_KEY_TYPE:
			keyType = ulong(at.Value)
		case pkcs11.CKA_ID:
			r.id = at.Value
		case pkcs11.CKA_LABEL:
			r.label = string(at.Value)
		case pkcs11.CKA_SENSITIVE:
			r.sens = len(at.Value) > 0 && at.Value[0] != 0
		case pkcs11.CKA_EXTRACTABLE:
			r.extr = len(at.Value) > 0 && at.Value[0] != 0
		}
	}
	switch keyType {
	case pkcs11.CKK_RSA:
		r.kt = "rsa"
	case pkcs11.CKK_EC:
		r.kt = "ec"
	case ckkECEdwards:
		r.kt = Ed25519
	default:
		return nil, &Error{Op: "read key", Class: ClassUnsupported, Err: fmt.Errorf("%w: key type 0x%x", ErrUnsupported, keyType)}
	}
	return r, nil
}

// ulong decodes a CK_ULONG attribute in host byte order.
func ulong(b []byte) uint {
	switch len(b) {
	case 8:
		return uint(binary.NativeEndian.Uint64(b))
	case 4:
		return uint(binary.NativeEndian.Uint32(b))
	}
	return ^uint(0)
}

// readPublic reads the public half of a key: from the private object for
// RSA, from the public object with the same id (or label) for EC keys.
func readPublic(a api, h pkcs11.SessionHandle, r *keyRef) (crypto.PublicKey, error) {
	if r.kt == "rsa" {
		attrs, err := a.GetAttributeValue(h, r.priv, []*pkcs11.Attribute{
			pkcs11.NewAttribute(pkcs11.CKA_MODULUS, nil),
			pkcs11.NewAttribute(pkcs11.CKA_PUBLIC_EXPONENT, nil),
		})
		if err != nil {
			return nil, err
		}
		n := new(big.Int).SetBytes(attrs[0].Value)
		e := new(big.Int).SetBytes(attrs[1].Value)
		if !e.IsInt64() || e.Int64() > 1<<31-1 {
			return nil, errors.New("RSA public exponent out of range")
		}
		pub := &rsa.PublicKey{N: n, E: int(e.Int64())}
		kt, err := KeyTypeOf(pub)
		if err != nil {
			return nil, err
		}
		r.kt = kt
		return pub, nil
	}
	sel := &uri.URI{ID: r.id}
	if len(r.id) == 0 {
		sel = &uri.URI{Object: r.label}
	}
	objs, err := findObjects(a, h, keyTemplate(pkcs11.CKO_PUBLIC_KEY, sel), 2)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("%d public key objects share the private key's id %x; want exactly one", len(objs), r.id)
	}
	attrs, err := a.GetAttributeValue(h, objs[0], []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, nil),
		pkcs11.NewAttribute(pkcs11.CKA_EC_POINT, nil),
	})
	if err != nil {
		return nil, err
	}
	params, point := attrs[0].Value, attrs[1].Value
	switch {
	case bytes.Equal(params, oidEd25519) || bytes.Equal(params, nameEd25519):
		raw, err := unwrapPoint(point, ed25519.PublicKeySize)
		if err != nil {
			return nil, err
		}
		r.kt = Ed25519
		return ed25519.PublicKey(raw), nil
	case bytes.Equal(params, oidP256):
		r.kt = ECDSAP256
		return parseECPoint(elliptic.P256(), point, 65)
	case bytes.Equal(params, oidP384):
		r.kt = ECDSAP384
		return parseECPoint(elliptic.P384(), point, 97)
	}
	return nil, fmt.Errorf("%w: EC parameters %x", ErrUnsupported, params)
}

// unwrapPoint accepts CKA_EC_POINT raw or as a DER OCTET STRING.
func unwrapPoint(b []byte, size int) ([]byte, error) {
	if len(b) == size {
		return b, nil
	}
	if len(b) == size+2 && b[0] == 0x04 && int(b[1]) == size {
		return b[2:], nil
	}
	if len(b) == size+3 && b[0] == 0x04 && b[1] == 0x81 && int(b[2]) == size {
		return b[3:], nil
	}
	return nil, fmt.Errorf("malformed EC point (%d bytes, want %d)", len(b), size)
}

// wrapPoint encodes a point as the DER OCTET STRING CKA_EC_POINT holds.
func wrapPoint(raw []byte) []byte {
	if len(raw) < 128 {
		return append([]byte{0x04, byte(len(raw))}, raw...)
	}
	return append([]byte{0x04, 0x81, byte(len(raw))}, raw...)
}

func parseECPoint(c elliptic.Curve, b []byte, size int) (*ecdsa.PublicKey, error) {
	raw, err := unwrapPoint(b, size)
	if err != nil {
		return nil, err
	}
	return ecdsa.ParseUncompressedPublicKey(c, raw)
}

// newKeyID returns a fresh random CKA_ID.
func newKeyID() []byte {
	id := make([]byte, 16)
	rand.Read(id)
	return id
}

// generate makes a key pair of type kt on t: a token key named by u, or,
// with u nil, an ephemeral key pair that lives until the signer is closed
// or collected. Ephemeral pairs are session objects; a token that refuses
// those (tpm2-pkcs11 keeps only token objects) gets token objects
// labelled ephemeralPrefix+id instead, destroyed the same way.
func (p *Provider) generate(ctx context.Context, t *token, kt KeyType, u *uri.URI) (*signer, error) {
	if u != nil {
		ref := &uri.URI{ID: u.ID, Object: u.Object}
		if ref.ID == nil {
			ref.ID = newKeyID()
		}
		return p.generateAs(ctx, t, kt, ref, u, true, false)
	}
	ref := &uri.URI{ID: newKeyID()}
	s, err := p.generateAs(ctx, t, kt, ref, nil, false, true)
	if c := ClassOf(err); c == ClassUnsupported || c == ClassInput {
		ref.Object = ephemeralPrefix + hex.EncodeToString(ref.ID)
		if s, err2 := p.generateAs(ctx, t, kt, ref, nil, true, true); err2 == nil {
			return s, nil
		}
	}
	return s, err
}

// ephemeralPrefix labels the token objects of ephemeral key pairs on
// tokens without session objects, so that any a crash left are found.
const ephemeralPrefix = "offload-ephemeral-"

// keyPairMechanism is the generation mechanism of kt and the public key
// template attributes it needs.
func keyPairMechanism(kt KeyType) (uint, []*pkcs11.Attribute, error) {
	switch kt {
	case Ed25519:
		return ckmECEdwardsKeyPairGen, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, ecParams(kt))}, nil
	case ECDSAP256, ECDSAP384:
		return pkcs11.CKM_EC_KEY_PAIR_GEN, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, ecParams(kt))}, nil
	case RSA2048, RSA3072, RSA4096:
		return pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_MODULUS_BITS, kt.RSABits()),
			pkcs11.NewAttribute(pkcs11.CKA_PUBLIC_EXPONENT, []byte{1, 0, 1})}, nil
	}
	return 0, nil, fmt.Errorf("pkcs11: unknown key type %q", kt)
}

// generateAs makes the key pair ref names, as token objects or session
// objects; u, when set, is checked to name no existing key first.
func (p *Provider) generateAs(ctx context.Context, t *token, kt KeyType, ref, u *uri.URI, onToken, ephemeral bool) (*signer, error) {
	mech, extra, err := keyPairMechanism(kt)
	if err != nil {
		return nil, err
	}
	if _, ok := t.capsOf().mechs[mech]; !ok {
		return nil, &Error{Op: "generate " + string(kt), Token: t.label(), Class: ClassUnsupported,
			Err: fmt.Errorf("%w: the token lacks %s", ErrUnsupported, mechName(mech))}
	}
	common := func(class uint) []*pkcs11.Attribute {
		a := []*pkcs11.Attribute{
			pkcs11.NewAttribute(pkcs11.CKA_CLASS, class),
			pkcs11.NewAttribute(pkcs11.CKA_TOKEN, onToken),
			pkcs11.NewAttribute(pkcs11.CKA_ID, ref.ID),
		}
		if ref.Object != "" {
			a = append(a, pkcs11.NewAttribute(pkcs11.CKA_LABEL, ref.Object))
		}
		return a
	}
	pubT := append(append(common(pkcs11.CKO_PUBLIC_KEY), pkcs11.NewAttribute(pkcs11.CKA_VERIFY, true)), extra...)
	privT := append(common(pkcs11.CKO_PRIVATE_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_PRIVATE, true),
		pkcs11.NewAttribute(pkcs11.CKA_SENSITIVE, true),
		pkcs11.NewAttribute(pkcs11.CKA_EXTRACTABLE, false),
		pkcs11.NewAttribute(pkcs11.CKA_SIGN, true))
	var k *keyRef
	err = t.do(ctx, "generate "+string(kt), ref.String(), func(h pkcs11.SessionHandle) error {
		if u != nil {
			if objs, err := findObjects(p.c.api, h, keyTemplate(pkcs11.CKO_PRIVATE_KEY, u), 1); err != nil {
				return err
			} else if len(objs) > 0 {
				return &Error{Op: "generate", Token: t.label(), What: ref.String(), Class: ClassOther,
					Err: errors.New("a private key with this id/label already exists; delete it first or choose another")}
			}
		}
		_, priv, err := p.c.api.GenerateKeyPair(h, []*pkcs11.Mechanism{pkcs11.NewMechanism(mech, nil)}, pubT, privT)
		if err != nil {
			return err
		}
		k, err = readKeyAttrs(p.c.api, h, priv)
		if err == nil {
			k.pub, err = readPublic(p.c.api, h, k)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p.newSigner(t, ref, k, ephemeral), nil
}

// parseKeyRef parses a key reference and enters the gate for op; the
// caller exits the gate when finished.
func (p *Provider) parseKeyRef(op, ref string) (*uri.URI, error) {
	u, err := uri.Parse(ref)
	if err != nil {
		return nil, err
	}
	if err := p.c.enter(op, u.String()); err != nil {
		return nil, err
	}
	return u, nil
}

// Generate makes a key pair of type kt on the one token the pkcs11: URI
// ref names, stored under its label and id (a random id when it has
// none). ctx bounds the wait for a session; the generation itself, once
// the module runs it, cannot be interrupted (RSA-4096 takes seconds).
func (p *Provider) Generate(ctx context.Context, ref string, kt KeyType) (crypto.Signer, error) {
	u, err := p.parseKeyRef("generate "+string(kt), ref)
	if err != nil {
		return nil, err
	}
	defer p.c.exit()
	return p.generateURI(ctx, u, kt)
}

func (p *Provider) generateURI(ctx context.Context, u *uri.URI, kt KeyType) (crypto.Signer, error) {
	if !u.HasObject() {
		return nil, fmt.Errorf("pkcs11: %q names no key: give object= (a label) and/or id=", u)
	}
	t, err := p.oneToken(u)
	if err != nil {
		return nil, err
	}
	s, err := p.generate(ctx, t, kt, u)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// oneToken returns the single token u's attributes select.
func (p *Provider) oneToken(u *uri.URI) (*token, error) {
	ts := p.tokensFor(u)
	switch len(ts) {
	case 0:
		return nil, &Error{Op: "find token", What: u.String(), Class: ClassNotFound,
			Err: fmt.Errorf("%w: no token of this provider matches (tokens: %s)", ErrNotFound, describeAll(p.Tokens()))}
	case 1:
		return ts[0], nil
	}
	var descs []uri.TokenInfo
	for _, t := range ts {
		_, _, d := t.state()
		descs = append(descs, d)
	}
	return nil, &Error{Op: "find token", What: u.String(), Class: ClassOther,
		Err: fmt.Errorf("%w: %d tokens match (%s); add token= or serial=", ErrAmbiguous, len(ts), describeAll(descs))}
}

// Import stores a private key (and its public half) on the one token the
// URI ref names, as a sensitive, non-extractable token object: afterwards
// only the token can use it. It returns a signer for the stored key.
func (p *Provider) Import(ctx context.Context, ref string, key crypto.PrivateKey) (crypto.Signer, error) {
	u, err := p.parseKeyRef("import key", ref)
	if err != nil {
		return nil, err
	}
	defer p.c.exit()
	if key == nil {
		return nil, errors.New("pkcs11: import key: no key given")
	}
	if !u.HasObject() {
		return nil, fmt.Errorf("pkcs11: %q names no key: give object= (a label) and/or id=", u)
	}
	t, err := p.oneToken(u)
	if err != nil {
		return nil, err
	}
	kref := &uri.URI{ID: u.ID, Object: u.Object}
	if kref.ID == nil {
		kref.ID = newKeyID()
	}
	priv, pub, err := importTemplates(key)
	if err != nil {
		return nil, err
	}
	common := []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true), pkcs11.NewAttribute(pkcs11.CKA_ID, kref.ID)}
	if kref.Object != "" {
		common = append(common, pkcs11.NewAttribute(pkcs11.CKA_LABEL, kref.Object))
	}
	priv = append(append(priv, common...),
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_PRIVATE_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_PRIVATE, true),
		pkcs11.NewAttribute(pkcs11.CKA_SENSITIVE, true),
		pkcs11.NewAttribute(pkcs11.CKA_EXTRACTABLE, false),
		pkcs11.NewAttribute(pkcs11.CKA_SIGN, true))
	pub = append(append(pub, common...),
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_PUBLIC_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_VERIFY, true))
	var k *keyRef
	err = t.do(ctx, "import key", kref.String(), func(h pkcs11.SessionHandle) error {
		if objs, err := findObjects(p.c.api, h, keyTemplate(pkcs11.CKO_PRIVATE_KEY, u), 1); err != nil {
			return err
		} else if len(objs) > 0 {
			return &Error{Op: "import key", Token: t.label(), What: kref.String(), Class: ClassOther,
				Err: errors.New("a private key with this id/label already exists; delete it first or choose another")}
		}
		pubH, err := p.c.api.CreateObject(h, pub)
		if err != nil {
			return err
		}
		privH, err := p.c.api.CreateObject(h, priv)
		if err != nil {
			_ = p.c.api.DestroyObject(h, pubH)
			return err
		}
		k, err = readKeyAttrs(p.c.api, h, privH)
		if err == nil {
			k.pub, err = readPublic(p.c.api, h, k)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p.newSigner(t, u, k, false), nil
}

// importTemplates returns the key-specific attributes of the private and
// public objects for key.
func importTemplates(key crypto.PrivateKey) (priv, pub []*pkcs11.Attribute, err error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		var params []byte
		switch k.Curve {
		case elliptic.P256():
			params = oidP256
		case elliptic.P384():
			params = oidP384
		default:
			return nil, nil, fmt.Errorf("pkcs11: unsupported curve %s (want P-256 or P-384)", k.Curve.Params().Name)
		}
		d, err := k.Bytes()
		if err != nil {
			return nil, nil, err
		}
		point, err := k.PublicKey.Bytes()
		if err != nil {
			return nil, nil, err
		}
		priv = []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_EC),
			pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, params), pkcs11.NewAttribute(pkcs11.CKA_VALUE, d)}
		pub = []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_EC),
			pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, params), pkcs11.NewAttribute(pkcs11.CKA_EC_POINT, wrapPoint(point))}
	case ed25519.PrivateKey:
		priv = []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, ckkECEdwards),
			pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, oidEd25519), pkcs11.NewAttribute(pkcs11.CKA_VALUE, k.Seed())}
		pub = []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, ckkECEdwards),
			pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, oidEd25519),
			pkcs11.NewAttribute(pkcs11.CKA_EC_POINT, wrapPoint(k.Public().(ed25519.PublicKey)))}
	case *ed25519.PrivateKey:
		return importTemplates(*k)
	case *rsa.PrivateKey:
		if _, err := KeyTypeOf(&k.PublicKey); err != nil {
			return nil, nil, err
		}
		if len(k.Primes) != 2 {
			return nil, nil, errors.New("pkcs11: multi-prime RSA keys are not supported")
		}
		k.Precompute()
		e := big.NewInt(int64(k.E)).Bytes()
		priv = []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_RSA),
			pkcs11.NewAttribute(pkcs11.CKA_MODULUS, k.N.Bytes()),
			pkcs11.NewAttribute(pkcs11.CKA_PUBLIC_EXPONENT, e),
			pkcs11.NewAttribute(pkcs11.CKA_PRIVATE_EXPONENT, k.D.Bytes()),
			pkcs11.NewAttribute(pkcs11.CKA_PRIME_1, k.Primes[0].Bytes()),
			pkcs11.NewAttribute(pkcs11.CKA_PRIME_2, k.Primes[1].Bytes()),
			pkcs11.NewAttribute(pkcs11.CKA_EXPONENT_1, k.Precomputed.Dp.Bytes()),
			pkcs11.NewAttribute(pkcs11.CKA_EXPONENT_2, k.Precomputed.Dq.Bytes()),
			pkcs11.NewAttribute(pkcs11.CKA_COEFFICIENT, k.Precomputed.Qinv.Bytes())}
		pub = []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_RSA),
			pkcs11.NewAttribute(pkcs11.CKA_MODULUS, k.N.Bytes()),
			pkcs11.NewAttribute(pkcs11.CKA_PUBLIC_EXPONENT, e)}
	default:
		return nil, nil, fmt.Errorf("pkcs11: cannot import a %T (want Ed25519, ECDSA P-256/P-384 or RSA)", key)
	}
	return priv, pub, nil
}

// List describes the key pairs on the tokens the URI ref selects whose id
// and label match it.
func (p *Provider) List(ctx context.Context, ref string) ([]KeyInfo, error) {
	u, err := p.parseKeyRef("list keys", ref)
	if err != nil {
		return nil, err
	}
	defer p.c.exit()
	ts := p.tokensFor(u)
	if len(ts) == 0 { // a misspelt label lists nothing, and says why
		return nil, &Error{Op: "list keys", What: u.String(), Class: ClassNotFound,
			Err: fmt.Errorf("%w: no token of this provider matches (tokens: %s)", ErrNotFound, describeAll(p.Tokens()))}
	}
	var out []KeyInfo
	for _, t := range ts {
		err := t.do(ctx, "list keys", u.String(), func(h pkcs11.SessionHandle) error {
			objs, err := findObjects(p.c.api, h, keyTemplate(pkcs11.CKO_PRIVATE_KEY, u), 1024)
			if err != nil {
				return err
			}
			for _, o := range objs {
				r, err := readKeyAttrs(p.c.api, h, o)
				if err != nil {
					continue
				}
				info := KeyInfo{Token: t.label(), Label: r.label, ID: r.id, Sensitive: r.sens, Extractable: r.extr}
				if pub, err := readPublic(p.c.api, h, r); err == nil {
					info.Public, info.Type = pub, r.kt
				}
				_, _, d := t.state()
				ku := d.URI()
				ku.Object, ku.ID, ku.Type = r.label, r.id, "private"
				info.URI = ku.String()
				out = append(out, info)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// Delete destroys the key pair the URI ref names on the one token it
// selects: the private key, the public key and certificates sharing its
// id. It returns the number of objects destroyed.
func (p *Provider) Delete(ctx context.Context, ref string) (int, error) {
	u, err := p.parseKeyRef("delete key", ref)
	if err != nil {
		return 0, err
	}
	defer p.c.exit()
	if !u.HasObject() {
		return 0, fmt.Errorf("pkcs11: %q names no key: give object= and/or id= (nothing was deleted)", u)
	}
	t, err := p.oneToken(u)
	if err != nil {
		return 0, err
	}
	n := 0
	err = t.do(ctx, "delete key", u.String(), func(h pkcs11.SessionHandle) error {
		k, err := findKey(p.c.api, h, u, t.label())
		if err != nil {
			return err
		}
		sel := &uri.URI{ID: k.id}
		if len(k.id) == 0 {
			sel = &uri.URI{Object: k.label}
		}
		var victims []pkcs11.ObjectHandle
		for _, class := range []uint{pkcs11.CKO_PUBLIC_KEY, pkcs11.CKO_CERTIFICATE} {
			objs, err := findObjects(p.c.api, h, keyTemplate(class, sel), 16)
			if err != nil {
				return err
			}
			victims = append(victims, objs...)
		}
		victims = append(victims, k.priv)
		for _, o := range victims {
			if err := p.c.api.DestroyObject(h, o); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// PublicKey returns the public key of the key pair the URI ref names.
func (p *Provider) PublicKey(ctx context.Context, ref string) (crypto.PublicKey, error) {
	u, err := p.parseKeyRef("read public key", ref)
	if err != nil {
		return nil, err
	}
	defer p.c.exit()
	s, err := p.openSignerURI(ctx, u)
	if err != nil {
		return nil, err
	}
	return s.Public(), nil
}
