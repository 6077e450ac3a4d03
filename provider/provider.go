package provider

import (
	"context"
	"crypto"
	"crypto/cipher"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"
)

// Kind says where a provider's work is done.
type Kind int

const (
	KindSoftware Kind = iota + 1 // portable code
	KindCPU                      // CPU instructions made for cryptography
	KindHardware                 // a separate device, usually through PKCS #11
	KindAgent                    // another process holds the key: an ssh-agent
)

func (k Kind) String() string {
	switch k {
	case KindSoftware:
		return "software"
	case KindCPU:
		return "cpu"
	case KindHardware:
		return "hardware"
	case KindAgent:
		return "agent"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Op is a set of operations a capability covers.
type Op uint16

const (
	OpSeal Op = 1 << iota
	OpOpen
	OpEncrypt // stream and keystream XOR
	OpMAC
	OpSign
	OpVerify
	OpDerive // key agreement
	OpEncapsulate
	OpDecapsulate
	OpHash
	OpGenerate // key generation into the provider
)

var opNames = [...]string{"seal", "open", "encrypt", "mac", "sign", "verify", "derive",
	"encapsulate", "decapsulate", "hash", "generate"}

func (o Op) String() string { return bitNames(uint32(o), opNames[:]) }

// Flag qualifies a capability.
type Flag uint8

const (
	FlagHardware     Flag = 1 << iota // executed by dedicated hardware or CPU crypto instructions
	FlagKeyResident                   // keys live in the provider and cannot be exported
	FlagConstantTime                  // implementation is constant-time with respect to secrets
)

var flagNames = []string{"hardware", "key-resident", "constant-time"}

func (f Flag) String() string { return bitNames(uint32(f), flagNames) }

func bitNames(v uint32, names []string) string {
	var parts []string
	for i, n := range names {
		if v&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ",")
}

// Capability is one algorithm a provider offers, the operations and flags.
type Capability struct {
	Algorithm string
	Ops       Op
	Flags     Flag
}

// Provider is the minimal interface every provider implements. What a
// provider can build is told by optional interfaces, tested by type
// assertion: AEADProvider, StreamProvider, BlockProvider, KeyStreamProvider, MACProvider,
// OneTimeMACProvider, SignerProvider, KeyGenerator, KeyAgreementProvider,
// KEMProvider and HashProvider.
type Provider interface {
	Name() string
	Kind() Kind
	Capabilities() []Capability
	Close() error
}

// Identifier is implemented by providers whose measurements depend on more
// than their name (a PKCS #11 module path, token serial and firmware, say).
// Calibration caches are keyed by it.
type Identifier interface {
	Identity() string
}

// Matcher is implemented by providers that answer to more than their exact
// name in pins and deny lists, such as "pkcs11:token=unit0" for a token.
type Matcher interface {
	Matches(spec string) bool
}

// SpecChecker is implemented by providers that know the syntax of a
// kind of provider spec (the PKCS #11 provider checks pkcs11: URIs): the
// registry asks each about every pin and deny entry and refuses the
// policy when one answers with an error. CheckSpec returns nil for a spec
// it does not know.
type SpecChecker interface {
	CheckSpec(spec string) error
}

// Narrower is implemented by providers that can serve a pin naming part of
// them: a PKCS #11 provider over several tokens answers a pin
// "pkcs11:token=unit0" with a view restricted to that token.
type Narrower interface {
	Narrow(spec string) (Provider, error)
}

// AEADProvider builds AEADs (FamilyAEAD).
type AEADProvider interface {
	NewAEAD(alg *Algorithm, key []byte) (cipher.AEAD, error)
}

// FallibleAEAD is a cipher.AEAD that reports a provider fault as an error.
// cipher.AEAD's Seal cannot return one, so an AEAD on a device that fails
// must either finish the work elsewhere or panic; an AEAD implementing
// FallibleAEAD returns the fault from SealErr instead. OpenErr's error
// wraps ErrAuthentication when the message does not authenticate and is a
// provider fault otherwise. Use the package functions Seal and Open, which
// take any cipher.AEAD.
type FallibleAEAD interface {
	cipher.AEAD
	SealErr(dst, nonce, plaintext, additionalData []byte) ([]byte, error)
	OpenErr(dst, nonce, ciphertext, additionalData []byte) ([]byte, error)
}

// Seal is a.Seal, returning a provider fault as an error when a is a
// FallibleAEAD.
func Seal(a cipher.AEAD, dst, nonce, plaintext, additionalData []byte) ([]byte, error) {
	if f, ok := a.(FallibleAEAD); ok {
		return f.SealErr(dst, nonce, plaintext, additionalData)
	}
	return a.Seal(dst, nonce, plaintext, additionalData), nil
}

// Open is a.Open with FallibleAEAD's error contract: an error wrapping
// ErrAuthentication when the message does not authenticate, a provider
// fault otherwise. A plain cipher.AEAD's errors are authentication errors.
func Open(a cipher.AEAD, dst, nonce, ciphertext, additionalData []byte) ([]byte, error) {
	if f, ok := a.(FallibleAEAD); ok {
		return f.OpenErr(dst, nonce, ciphertext, additionalData)
	}
	out, err := a.Open(dst, nonce, ciphertext, additionalData)
	if err != nil && !errors.Is(err, ErrAuthentication) {
		err = ErrAuthentication
	}
	return out, err
}

// ContextSigner is a crypto.Signer whose signatures can wait — for a
// session of a token's pool, or for the token's recovery — and so take a
// context. crypto.Signer.Sign has none: signers of providers that can wait
// bound Sign by the provider's own deadline instead, and offer
// SignContext for callers that have a context. Use the package function
// SignContext, which takes any crypto.Signer.
type ContextSigner interface {
	crypto.Signer
	SignContext(ctx context.Context, rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error)
}

// SignContext signs with s, honouring ctx when s is a ContextSigner; for
// other signers it only refuses a context that is already done.
func SignContext(ctx context.Context, s crypto.Signer, rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if cs, ok := s.(ContextSigner); ok {
		return cs.SignContext(ctx, rand, digest, opts)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("provider: sign: %w", err)
	}
	return s.Sign(rand, digest, opts)
}

// ChangeNotifier is implemented by providers whose capabilities change
// after they are registered: a PKCS #11 provider whose token attaches
// late. Register calls NotifyChange once; the provider calls f whenever
// its capabilities change, and the registry then resolves its algorithms
// again.
type ChangeNotifier interface {
	NotifyChange(f func())
}

// PendingReporter is implemented by providers with configured parts that
// are not attached yet (a PKCS #11 token that is not present): Pending
// describes each one, "" when nothing is pending. Policy checks treat a
// pin such a provider cannot serve yet as a warning, not an error.
type PendingReporter interface {
	Pending() []string
}

// PoolStats is the state of one session pool of a provider (a PKCS #11
// token's).
type PoolStats struct {
	Provider string
	Pool     string // the token's label
	Up       bool   // reachable now
	InUse    int    // sessions handed out
	Idle     int    // sessions open and idle
	Max      int    // pool size
	// Waits counts requests that found every session busy and waited;
	// Timeouts those that gave up; WaitTime is the total time waited.
	Waits, Timeouts uint64
	WaitTime        time.Duration
	Recoveries      uint64 // times the token was reattached
}

// PoolReporter is implemented by providers with session pools.
type PoolReporter interface {
	PoolStats() []PoolStats
}

// StreamProvider builds stream ciphers such as AES-CTR (FamilyStream).
type StreamProvider interface {
	NewStream(alg *Algorithm, key, iv []byte) (cipher.Stream, error)
}

// BlockProvider builds block ciphers (FamilyBlock) for modes the caller
// runs, such as SSH's CBC ciphers.
type BlockProvider interface {
	NewBlock(alg *Algorithm, key []byte) (cipher.Block, error)
}

// KeyStream XORs src with the keystream for an explicit nonce, starting at
// block counter, into dst. It holds no position between calls, so one
// instance serves every packet of a connection without allocating.
type KeyStream interface {
	XORKeyStreamAt(dst, src, nonce []byte, counter uint32)
}

// KeyStreamProvider builds keystreams such as ChaCha20 (FamilyKeyStream).
type KeyStreamProvider interface {
	NewKeyStream(alg *Algorithm, key []byte) (KeyStream, error)
}

// MACProvider builds keyed hashes such as HMAC (FamilyMAC).
type MACProvider interface {
	NewMAC(alg *Algorithm, key []byte) (hash.Hash, error)
}

// OneTimeMAC computes a one-time authenticator (Poly1305): the key must
// never be used for two messages.
type OneTimeMAC interface {
	Sum(out, msg, key []byte)
	Verify(tag, msg, key []byte) bool
}

// OneTimeMACProvider builds one-time authenticators (FamilyOneTimeMAC).
type OneTimeMACProvider interface {
	NewOneTimeMAC(alg *Algorithm) (OneTimeMAC, error)
}

// SignerProvider opens a signer for a key the provider can reach, named by a
// key reference ("pkcs11:..." URI, "file:" URI or a path).
type SignerProvider interface {
	// CanOpen reports whether ref names a key this provider may hold,
	// without touching the key.
	CanOpen(ref string) bool
	Signer(ctx context.Context, ref string) (crypto.Signer, error)
}

// KeyGenerator creates signing keys inside the provider. With an empty ref
// the key is ephemeral (used by calibration and tests).
type KeyGenerator interface {
	GenerateSigner(ctx context.Context, alg *Algorithm, ref string) (crypto.Signer, error)
}

// KeyAgreement is one side of an ephemeral Diffie-Hellman exchange.
type KeyAgreement interface {
	PublicKey() []byte
	// SharedSecret rejects malformed or low-order peer keys with an error.
	SharedSecret(peer []byte) ([]byte, error)
}

// KeyAgreementProvider makes ephemeral key pairs (FamilyKeyAgreement).
type KeyAgreementProvider interface {
	NewKeyAgreement(alg *Algorithm) (KeyAgreement, error)
}

// Decapsulator is the receiving side of a KEM.
type Decapsulator interface {
	EncapsulationKey() []byte
	Decapsulate(ciphertext []byte) (shared []byte, err error)
}

// KEMProvider implements key encapsulation (FamilyKEM).
type KEMProvider interface {
	NewDecapsulator(alg *Algorithm) (Decapsulator, error)
	Encapsulate(alg *Algorithm, encapsulationKey []byte) (shared, ciphertext []byte, err error)
}

// HashProvider builds hashes (FamilyHash).
type HashProvider interface {
	NewHash(alg *Algorithm) (hash.Hash, error)
}

// Supports reports whether p lists alg with all of ops among its capabilities.
func Supports(p Provider, alg string, ops Op) bool {
	_, ok := capabilityOf(p, alg, ops)
	return ok
}

func capabilityOf(p Provider, alg string, ops Op) (Capability, bool) {
	for _, c := range p.Capabilities() {
		if c.Algorithm == alg && c.Ops&ops == ops {
			return c, true
		}
	}
	return Capability{}, false
}

// identity returns the string calibration results are keyed by.
func identity(p Provider) string {
	if id, ok := p.(Identifier); ok {
		return id.Identity()
	}
	return p.Name()
}
