package providertest_test

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/mlkem"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"sync"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/provider/providertest"
	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/poly1305" //nolint:staticcheck // reference Poly1305
)

// stdProvider is a test-only provider built from the standard library and
// golang.org/x/crypto. It offers every catalog entry and follows every
// rule the suite checks, so the suite must pass on it; broken_test.go
// breaks it one rule at a time.
type stdProvider struct{}

func (stdProvider) Name() string        { return "std" }
func (stdProvider) Kind() provider.Kind { return provider.KindSoftware }
func (stdProvider) Close() error        { return nil }
func (stdProvider) Capabilities() []provider.Capability {
	ops := map[provider.Family]provider.Op{
		provider.FamilyAEAD:         provider.OpSeal | provider.OpOpen,
		provider.FamilyStream:       provider.OpEncrypt,
		provider.FamilyKeyStream:    provider.OpEncrypt,
		provider.FamilyMAC:          provider.OpMAC,
		provider.FamilyOneTimeMAC:   provider.OpMAC,
		provider.FamilySignature:    provider.OpSign | provider.OpVerify | provider.OpGenerate,
		provider.FamilyKeyAgreement: provider.OpDerive,
		provider.FamilyKEM:          provider.OpEncapsulate | provider.OpDecapsulate,
		provider.FamilyHash:         provider.OpHash,
		provider.FamilyBlock:        provider.OpEncrypt,
	}
	var caps []provider.Capability
	for _, a := range provider.Algorithms() {
		if noStdImplementation[a.Name] {
			continue
		}
		caps = append(caps, provider.Capability{Algorithm: a.Name, Ops: ops[a.Family]})
	}
	return caps
}

// noStdImplementation lists the catalog entries that neither the standard
// library nor x/crypto implements; the software provider's own code is
// tested against their published vectors instead.
var noStdImplementation = map[string]bool{"sntrup761": true,
	"modp1024": true, "modp2048": true, "modp4096": true, "modp8192": true, "modp-gex": true,
	"umac-64": true, "umac-128": true}

func wrongFamily(alg *provider.Algorithm, want provider.Family) error {
	if alg.Family != want {
		return &provider.WrongFamilyError{Algorithm: alg.Name, Got: alg.Family, Want: want}
	}
	return nil
}

func (stdProvider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	if err := wrongFamily(alg, provider.FamilyAEAD); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	if alg.Name == "chacha20-poly1305" {
		return chacha20poly1305.New(key)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func (stdProvider) NewStream(alg *provider.Algorithm, key, iv []byte) (cipher.Stream, error) {
	if err := wrongFamily(alg, provider.FamilyStream); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	if len(iv) != alg.NonceSize {
		return nil, fmt.Errorf("std: %s needs a %d-byte IV", alg.Name, alg.NonceSize)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewCTR(b, iv), nil
}

func (stdProvider) NewBlock(alg *provider.Algorithm, key []byte) (cipher.Block, error) {
	if err := wrongFamily(alg, provider.FamilyBlock); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	if alg.Name == "3des" {
		return des.NewTripleDESCipher(key)
	}
	return aes.NewCipher(key)
}

type chachaStream struct{ key []byte }

func (c chachaStream) XORKeyStreamAt(dst, src, nonce []byte, counter uint32) {
	if len(nonce) != chacha20.NonceSize {
		panic("std: chacha20 nonce must be 12 bytes")
	}
	s, err := chacha20.NewUnauthenticatedCipher(c.key, nonce)
	if err != nil {
		panic(err)
	}
	s.SetCounter(counter)
	s.XORKeyStream(dst, src)
}

func (stdProvider) NewKeyStream(alg *provider.Algorithm, key []byte) (provider.KeyStream, error) {
	if err := wrongFamily(alg, provider.FamilyKeyStream); err != nil {
		return nil, err
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	return chachaStream{key: append([]byte(nil), key...)}, nil
}

// NewMAC accepts HMAC keys of any length, so the RFC 4231 vectors run.
func (stdProvider) NewMAC(alg *provider.Algorithm, key []byte) (hash.Hash, error) {
	if err := wrongFamily(alg, provider.FamilyMAC); err != nil {
		return nil, err
	}
	return hmac.New(alg.Hash.New, key), nil
}

type polyMAC struct{}

func (polyMAC) Sum(out, msg, key []byte) {
	if len(out) < 16 || len(key) != 32 {
		panic("std: poly1305 needs a 16-byte out and a 32-byte key")
	}
	var k [32]byte
	var tag [16]byte
	copy(k[:], key)
	poly1305.Sum(&tag, msg, &k)
	copy(out, tag[:])
}

func (m polyMAC) Verify(tag, msg, key []byte) bool {
	if len(tag) != 16 || len(key) != 32 {
		return false
	}
	var want [16]byte
	m.Sum(want[:], msg, key)
	return subtle.ConstantTimeCompare(want[:], tag) == 1
}

func (stdProvider) NewOneTimeMAC(alg *provider.Algorithm) (provider.OneTimeMAC, error) {
	if err := wrongFamily(alg, provider.FamilyOneTimeMAC); err != nil {
		return nil, err
	}
	return polyMAC{}, nil
}

func (stdProvider) NewHash(alg *provider.Algorithm) (hash.Hash, error) {
	if err := wrongFamily(alg, provider.FamilyHash); err != nil {
		return nil, err
	}
	return alg.Hash.New(), nil
}

// rsaKeys: RSA generation is slow, so the test provider hands out two
// keys in turn. Real providers generate a fresh key each time.
var (
	rsaOnce sync.Once
	rsaPool [2]*rsa.PrivateKey
	rsaNext int
	rsaMu   sync.Mutex
)

func rsaKey() (*rsa.PrivateKey, error) {
	var err error
	rsaOnce.Do(func() {
		for i := range rsaPool {
			if rsaPool[i], err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
				return
			}
		}
	})
	if err != nil || rsaPool[1] == nil {
		return nil, errors.New("std: RSA key generation failed")
	}
	rsaMu.Lock()
	defer rsaMu.Unlock()
	rsaNext++
	return rsaPool[rsaNext%2], nil
}

func (stdProvider) GenerateSigner(_ context.Context, alg *provider.Algorithm, ref string) (crypto.Signer, error) {
	if err := wrongFamily(alg, provider.FamilySignature); err != nil {
		return nil, err
	}
	switch alg.Name {
	case "ed25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	case "ecdsa-p256-sha256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ecdsa-p384-sha384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ecdsa-p521-sha512":
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	}
	return rsaKey()
}

type ecdhAgreement struct{ priv *ecdh.PrivateKey }

func (a ecdhAgreement) PublicKey() []byte { return a.priv.PublicKey().Bytes() }

func (a ecdhAgreement) SharedSecret(peer []byte) ([]byte, error) {
	pub, err := a.priv.Curve().NewPublicKey(peer)
	if err != nil {
		return nil, err
	}
	return a.priv.ECDH(pub)
}

func (stdProvider) NewKeyAgreement(alg *provider.Algorithm) (provider.KeyAgreement, error) {
	if err := wrongFamily(alg, provider.FamilyKeyAgreement); err != nil {
		return nil, err
	}
	curve := map[string]ecdh.Curve{"x25519": ecdh.X25519(), "ecdh-p256": ecdh.P256(), "ecdh-p384": ecdh.P384(), "ecdh-p521": ecdh.P521()}[alg.Name]
	priv, err := curve.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return ecdhAgreement{priv}, nil
}

type mlkemDecapsulator struct{ dk *mlkem.DecapsulationKey768 }

func (d mlkemDecapsulator) EncapsulationKey() []byte { return d.dk.EncapsulationKey().Bytes() }
func (d mlkemDecapsulator) Decapsulate(ct []byte) ([]byte, error) {
	return d.dk.Decapsulate(ct)
}

func (stdProvider) NewDecapsulator(alg *provider.Algorithm) (provider.Decapsulator, error) {
	if err := wrongFamily(alg, provider.FamilyKEM); err != nil {
		return nil, err
	}
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		return nil, err
	}
	return mlkemDecapsulator{dk}, nil
}

func (stdProvider) Encapsulate(alg *provider.Algorithm, ek []byte) (shared, ct []byte, err error) {
	if err := wrongFamily(alg, provider.FamilyKEM); err != nil {
		return nil, nil, err
	}
	k, err := mlkem.NewEncapsulationKey768(ek)
	if err != nil {
		return nil, nil, err
	}
	shared, ct = k.Encapsulate()
	return shared, ct, nil
}

// TestReferenceProvider: the suite passes on a provider made of the
// standard library, which also checks the vector tables.
func TestReferenceProvider(t *testing.T) {
	providertest.TestProvider(t, stdProvider{})
}
