package providertest_test

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"hash"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/provider/providertest"
	"golang.org/x/crypto/chacha20"
)

// The suite's own checks must be able to fail. Each case below breaks the
// reference provider in one way and names the subtests that must catch it.
// TestBrokenProvidersAreCaught runs each case in a child process (the test
// binary itself, running TestBrokenHelper) and checks that the child fails
// in exactly those places, without crashing.

const brokenEnv = "PROVIDERTEST_BROKEN_CASE"

type brokenCase struct {
	name string
	want []string // subtests of TestBrokenHelper that must fail
	run  func(t *testing.T)
}

var (
	gcm128   = provider.MustLookup("aes128-gcm")
	chachaPP = provider.MustLookup("chacha20-poly1305")
	ctr128   = provider.MustLookup("aes128-ctr")
	chacha   = provider.MustLookup("chacha20")
	hmac256  = provider.MustLookup("hmac-sha256")
	poly     = provider.MustLookup("poly1305")
	sha256   = provider.MustLookup("sha256")
	ed       = provider.MustLookup("ed25519")
	p256     = provider.MustLookup("ecdsa-p256-sha256")
	x25519   = provider.MustLookup("x25519")
	ecdh256  = provider.MustLookup("ecdh-p256")
	mlkem768 = provider.MustLookup("ml-kem-768")
)

func aeadCase(name string, alg *provider.Algorithm, want ...string) brokenCase {
	return brokenCase{name, want, func(t *testing.T) {
		providertest.TestAEAD(t, brokenAEADProvider{name}, alg)
	}}
}

var brokenCases = []brokenCase{
	aeadCase("aead-no-auth", gcm128, "Tamper", "OpenFailureHidesPlaintext"),
	aeadCase("aead-ignores-ad", chachaPP, "KnownAnswers", "RoundTrip", "Tamper"),
	aeadCase("aead-leaks-on-failure", gcm128, "OpenFailureHidesPlaintext"),
	aeadCase("aead-clobbers-dst", gcm128, "AppendDst"),
	aeadCase("aead-writes-past-end", gcm128, "AppendDst"),
	aeadCase("aead-no-overlap-check", gcm128, "InexactOverlap"),
	aeadCase("aead-lenient-nonce", gcm128, "WrongNonceSize"),
	aeadCase("aead-wrong-overhead", gcm128, "Sizes"),
	aeadCase("aead-lenient-key", gcm128, "BadKeys"),
	aeadCase("aead-modifies-plaintext", gcm128, "InputsUnchanged"),
	aeadCase("aead-breaks-in-place", gcm128, "InPlace"),
	aeadCase("aead-ignores-nonce-byte", gcm128, "KnownAnswers", "RoundTrip", "Tamper"),

	{"ctr-64bit-counter", []string{"CounterCarry"}, func(t *testing.T) {
		providertest.TestStream(t, brokenStreamProvider{"64bit"}, ctr128)
	}},
	{"ctr-restarts", []string{"Reference"}, func(t *testing.T) {
		providertest.TestStream(t, brokenStreamProvider{"restart"}, ctr128)
	}},
	{"ctr-short-dst", []string{"BufferRules"}, func(t *testing.T) {
		providertest.TestStream(t, brokenStreamProvider{"short-dst"}, ctr128)
	}},
	{"ctr-lenient-iv", []string{"BadKeys"}, func(t *testing.T) {
		providertest.TestStream(t, brokenStreamProvider{"lenient-iv"}, ctr128)
	}},

	{"chacha-ignores-counter", []string{"KnownAnswers", "Reference", "Counter"}, func(t *testing.T) {
		providertest.TestKeyStream(t, brokenKeyStreamProvider{"no-counter"}, chacha)
	}},
	{"chacha-stateful", []string{"Stateless"}, func(t *testing.T) {
		providertest.TestKeyStream(t, brokenKeyStreamProvider{"stateful"}, chacha)
	}},
	{"chacha-long-tail-off-by-one-block", []string{"Reference"}, func(t *testing.T) {
		providertest.TestKeyStream(t, brokenKeyStreamProvider{"long-tail"}, chacha)
	}},
	{"chacha-accepts-xchacha-nonce", []string{"WrongNonceSize"}, func(t *testing.T) {
		providertest.TestKeyStream(t, brokenKeyStreamProvider{"xchacha"}, chacha)
	}},

	{"hmac-sum-resets", []string{"Contract"}, func(t *testing.T) {
		providertest.TestMAC(t, brokenHashProvider{"sum-resets"}, hmac256)
	}},
	{"hmac-ignores-key-tail", []string{"Reference", "KeyMatters"}, func(t *testing.T) {
		providertest.TestMAC(t, brokenHashProvider{"key-head"}, hmac256)
	}},
	{"hash-wrong-blocksize", []string{"Contract"}, func(t *testing.T) {
		providertest.TestHash(t, brokenHashProvider{"blocksize"}, sha256)
	}},
	{"hash-sum-overwrites", []string{"Contract"}, func(t *testing.T) {
		providertest.TestHash(t, brokenHashProvider{"sum-overwrites"}, sha256)
	}},

	{"poly-verify-prefix", []string{"Verify"}, func(t *testing.T) {
		providertest.TestOneTimeMAC(t, brokenPolyProvider{"prefix"}, poly)
	}},
	{"poly-verify-truncated", []string{"Verify"}, func(t *testing.T) {
		providertest.TestOneTimeMAC(t, brokenPolyProvider{"truncated"}, poly)
	}},
	{"poly-lenient-key", []string{"BadSizes"}, func(t *testing.T) {
		providertest.TestOneTimeMAC(t, brokenPolyProvider{"lenient-key"}, poly)
	}},

	{"signer-signs-other-message", []string{"SignVerify"}, func(t *testing.T) {
		s, _ := stdProvider{}.GenerateSigner(context.Background(), p256, "")
		providertest.TestSigner(t, otherMessageSigner{s, p256}, p256)
	}},
	{"signer-ed25519-ignores-opts", []string{"BadOptions"}, func(t *testing.T) {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		providertest.TestSigner(t, lenientEd25519{k}, ed)
	}},
	{"keygen-same-key", []string{"Distinct"}, func(t *testing.T) {
		providertest.TestKeyGenerator(t, &sameKeyGenerator{}, ed)
	}},

	{"x25519-accepts-low-order", []string{"BadPeers"}, func(t *testing.T) {
		providertest.TestKeyAgreement(t, brokenKAProvider{"zeros-on-error"}, x25519)
	}},
	{"ecdh-accepts-long-peer", []string{"BadPeers"}, func(t *testing.T) {
		providertest.TestKeyAgreement(t, brokenKAProvider{"truncate-peer"}, ecdh256)
	}},
	{"ecdh-hashes-secret", []string{"Reference"}, func(t *testing.T) {
		providertest.TestKeyAgreement(t, brokenKAProvider{"hash-secret"}, ecdh256)
	}},
	{"kem-pads-ciphertext", []string{"BadInputs"}, func(t *testing.T) {
		providertest.TestKEM(t, brokenKEMProvider{}, mlkem768)
	}},

	{"provider-missing-interface", []string{"aes128-gcm"}, func(t *testing.T) {
		providertest.TestProvider(t, capsOnly{[]provider.Capability{{Algorithm: "aes128-gcm", Ops: provider.OpSeal | provider.OpOpen}}})
	}},
	{"provider-unknown-algorithm", []string{""}, func(t *testing.T) {
		providertest.TestProvider(t, capsOnly{[]provider.Capability{{Algorithm: "aes512-gcm", Ops: provider.OpSeal}}})
	}},
}

func TestBrokenHelper(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("runs only as a child of TestBrokenProvidersAreCaught")
	}
	for _, c := range brokenCases {
		if c.name == name {
			c.run(t)
			return
		}
	}
	t.Fatalf("no broken case %q", name)
}

func TestBrokenProvidersAreCaught(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("child process")
	}
	for _, c := range brokenCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := runChild(c.name)
			if err == nil {
				t.Fatalf("the suite passed a provider broken as %q:\n%s", c.name, out)
			}
			if strings.Contains(out, "\npanic: ") || strings.Contains(out, "[recovered]") {
				t.Fatalf("the suite crashed instead of failing:\n%s", out)
			}
			failed := failedSubtests(out)
			for _, w := range c.want {
				if !slices.Contains(failed, w) {
					t.Errorf("want subtest %q to fail; failed: %q\n%s", w, failed, out)
				}
			}
		})
	}
}

func runChild(name string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), brokenEnv+"="+name)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// failedSubtests lists the first-level subtests of TestBrokenHelper that
// failed, "" standing for TestBrokenHelper itself.
func failedSubtests(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "--- FAIL: TestBrokenHelper")
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, " (")
		rest = strings.TrimPrefix(rest, "/")
		rest, _, _ = strings.Cut(rest, "/")
		names = append(names, rest)
	}
	return names
}

// ---- AEAD ----

type brokenAEADProvider struct{ mode string }

func (b brokenAEADProvider) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	if b.mode == "aead-lenient-key" {
		key = append(append([]byte(nil), key...), make([]byte, alg.KeySize)...)[:alg.KeySize]
	}
	a, err := stdProvider{}.NewAEAD(alg, key)
	if err != nil {
		return nil, err
	}
	return brokenAEAD{a, b.mode}, nil
}

type brokenAEAD struct {
	cipher.AEAD
	mode string
}

// decryptUnchecked recovers the plaintext of a GCM or ChaCha20-Poly1305
// ciphertext without looking at the tag: both XOR a keystream that does
// not depend on the additional data.
func decryptUnchecked(a cipher.AEAD, nonce, ct []byte) []byte {
	if len(ct) < a.Overhead() {
		return nil
	}
	n := len(ct) - a.Overhead()
	ks := a.Seal(nil, nonce, make([]byte, n), nil)
	pt := make([]byte, n)
	subtle.XORBytes(pt, ct[:n], ks[:n])
	return pt
}

func fixNonce(nonce []byte, size int) []byte {
	return append(append([]byte(nil), nonce...), make([]byte, size)...)[:size]
}

func (b brokenAEAD) Overhead() int {
	if b.mode == "aead-wrong-overhead" {
		return 12
	}
	return b.AEAD.Overhead()
}

func (b brokenAEAD) Seal(dst, nonce, pt, ad []byte) []byte {
	switch b.mode {
	case "aead-ignores-ad":
		ad = nil
	case "aead-lenient-nonce":
		nonce = fixNonce(nonce, b.NonceSize())
	case "aead-ignores-nonce-byte":
		nonce = fixNonce(nonce[:len(nonce)-1], b.NonceSize())
	case "aead-no-overlap-check":
		pt = append([]byte(nil), pt...)
	case "aead-breaks-in-place":
		if room := dst[len(dst):cap(dst)]; len(room) >= len(pt) {
			clear(room[:len(pt)])
		}
	}
	out := b.AEAD.Seal(dst, nonce, pt, ad)
	switch b.mode {
	case "aead-clobbers-dst":
		if len(dst) > 0 {
			out[0] ^= 1
		}
	case "aead-writes-past-end":
		if cap(out) > len(out) {
			out[:cap(out)][len(out)] ^= 0xff
		}
	case "aead-modifies-plaintext":
		if len(pt) > 0 && &out[len(dst)] != &pt[0] {
			pt[0] ^= 1
		}
	}
	return out
}

func (b brokenAEAD) Open(dst, nonce, ct, ad []byte) ([]byte, error) {
	switch b.mode {
	case "aead-ignores-ad":
		ad = nil
	case "aead-lenient-nonce":
		nonce = fixNonce(nonce, b.NonceSize())
	case "aead-ignores-nonce-byte":
		nonce = fixNonce(nonce[:len(nonce)-1], b.NonceSize())
	case "aead-no-overlap-check":
		ct = append([]byte(nil), ct...)
	case "aead-no-auth":
		pt := decryptUnchecked(b.AEAD, nonce, ct)
		if pt == nil {
			return nil, io.ErrUnexpectedEOF
		}
		return append(dst, pt...), nil
	}
	out, err := b.AEAD.Open(dst, nonce, ct, ad)
	if err != nil && b.mode == "aead-leaks-on-failure" {
		_ = append(dst, decryptUnchecked(b.AEAD, nonce, ct)...)
	}
	return out, err
}

// ---- AES-CTR ----

type brokenStreamProvider struct{ mode string }

func (b brokenStreamProvider) NewStream(alg *provider.Algorithm, key, iv []byte) (cipher.Stream, error) {
	if b.mode == "lenient-iv" {
		iv = fixNonce(iv, alg.NonceSize)
	}
	s, err := stdProvider{}.NewStream(alg, key, iv)
	if err != nil || b.mode == "lenient-iv" {
		return s, err
	}
	blk, _ := aes.NewCipher(key)
	return &brokenCTR{blk: blk, iv: append([]byte(nil), iv...), ctr: append([]byte(nil), iv...), mode: b.mode}, nil
}

// brokenCTR is a CTR mode with a deliberate fault.
type brokenCTR struct {
	blk     cipher.Block
	iv, ctr []byte
	ks      []byte // unused keystream
	mode    string
}

func (c *brokenCTR) XORKeyStream(dst, src []byte) {
	switch c.mode {
	case "restart":
		c.ctr, c.ks = append([]byte(nil), c.iv...), nil
	case "short-dst":
		src = src[:min(len(src), len(dst))]
	}
	if len(dst) < len(src) {
		panic("short dst")
	}
	for i := range src {
		if len(c.ks) == 0 {
			c.ks = make([]byte, 16)
			c.blk.Encrypt(c.ks, c.ctr)
			c.increment()
		}
		dst[i] = src[i] ^ c.ks[0]
		c.ks = c.ks[1:]
	}
}

// increment carries through all 128 bits, or only the low 64 in "64bit" mode.
func (c *brokenCTR) increment() {
	lo := binary.BigEndian.Uint64(c.ctr[8:]) + 1
	binary.BigEndian.PutUint64(c.ctr[8:], lo)
	if lo == 0 && c.mode != "64bit" {
		binary.BigEndian.PutUint64(c.ctr[:8], binary.BigEndian.Uint64(c.ctr[:8])+1)
	}
}

// ---- ChaCha20 keystream ----

type brokenKeyStreamProvider struct{ mode string }

func (b brokenKeyStreamProvider) NewKeyStream(alg *provider.Algorithm, key []byte) (provider.KeyStream, error) {
	ks, err := stdProvider{}.NewKeyStream(alg, key)
	if err != nil {
		return nil, err
	}
	return &brokenKeyStream{inner: ks, key: key, mode: b.mode, last: map[string]uint32{}}, nil
}

type brokenKeyStream struct {
	inner provider.KeyStream
	key   []byte
	mode  string
	last  map[string]uint32 // "stateful": blocks used per nonce
}

func (k *brokenKeyStream) XORKeyStreamAt(dst, src, nonce []byte, counter uint32) {
	switch k.mode {
	case "no-counter":
		counter = 0
	case "stateful":
		counter += k.last[string(nonce)]
		k.last[string(nonce)] += uint32(len(src)+63) / 64
	case "long-tail":
		// A split fast path whose tail restarts one block early, only on
		// inputs longer than any the random part of the suite draws.
		if n := len(src) - 64; counter == 1 && n >= 1024 {
			k.inner.XORKeyStreamAt(dst[:n], src[:n], nonce, counter)
			k.inner.XORKeyStreamAt(dst[n:], src[n:], nonce, counter+uint32(n/64)-1)
			return
		}
	case "xchacha":
		if len(nonce) == 24 || len(nonce) == 12 {
			xorChaCha(dst, src, k.key, nonce, counter)
			return
		}
		nonce = fixNonce(nonce, 12)
	}
	k.inner.XORKeyStreamAt(dst, src, nonce, counter)
}

// ---- HMAC and hashes ----

type brokenHashProvider struct{ mode string }

func (b brokenHashProvider) NewMAC(alg *provider.Algorithm, key []byte) (hash.Hash, error) {
	if b.mode == "key-head" && len(key) > 16 {
		key = key[:16]
	}
	h, err := stdProvider{}.NewMAC(alg, key)
	if err != nil {
		return nil, err
	}
	return brokenHash{h, b.mode}, nil
}

func (b brokenHashProvider) NewHash(alg *provider.Algorithm) (hash.Hash, error) {
	h, err := stdProvider{}.NewHash(alg)
	if err != nil {
		return nil, err
	}
	return brokenHash{h, b.mode}, nil
}

type brokenHash struct {
	hash.Hash
	mode string
}

func (h brokenHash) BlockSize() int {
	if h.mode == "blocksize" {
		return 32
	}
	return h.Hash.BlockSize()
}

func (h brokenHash) Sum(b []byte) []byte {
	switch h.mode {
	case "sum-resets":
		defer h.Reset()
	case "sum-overwrites":
		return h.Hash.Sum(nil)
	}
	return h.Hash.Sum(b)
}

// ---- Poly1305 ----

type brokenPolyProvider struct{ mode string }

func (b brokenPolyProvider) NewOneTimeMAC(alg *provider.Algorithm) (provider.OneTimeMAC, error) {
	return brokenPoly{b.mode}, nil
}

type brokenPoly struct{ mode string }

func (p brokenPoly) Sum(out, msg, key []byte) {
	if p.mode == "lenient-key" {
		key = fixNonce(key, 32)
	}
	polyMAC{}.Sum(out, msg, key)
}

func (p brokenPoly) Verify(tag, msg, key []byte) bool {
	if p.mode == "lenient-key" {
		key = fixNonce(key, 32)
	}
	want := make([]byte, 16)
	polyMAC{}.Sum(want, msg, key)
	switch p.mode {
	case "prefix":
		return len(tag) == 16 && subtle.ConstantTimeCompare(want[:8], tag[:8]) == 1
	case "truncated":
		n := min(len(tag), 16)
		return n > 0 && subtle.ConstantTimeCompare(want[:n], tag[:n]) == 1
	}
	return polyMAC{}.Verify(tag, msg, key)
}

// ---- signers ----

// otherMessageSigner signs the digest of a fixed message, whatever it is
// given.
type otherMessageSigner struct {
	crypto.Signer
	alg *provider.Algorithm
}

func (s otherMessageSigner) Sign(r io.Reader, _ []byte, opts crypto.SignerOpts) ([]byte, error) {
	h := s.alg.Hash.New()
	h.Write([]byte("always this"))
	return s.Signer.Sign(r, h.Sum(nil), opts)
}

// lenientEd25519 signs the input as a plain Ed25519 message whatever the
// options ask for.
type lenientEd25519 struct{ k ed25519.PrivateKey }

func (s lenientEd25519) Public() crypto.PublicKey { return s.k.Public() }
func (s lenientEd25519) Sign(_ io.Reader, msg []byte, _ crypto.SignerOpts) ([]byte, error) {
	return ed25519.Sign(s.k, msg), nil
}

type sameKeyGenerator struct{ s crypto.Signer }

func (g *sameKeyGenerator) GenerateSigner(ctx context.Context, alg *provider.Algorithm, ref string) (crypto.Signer, error) {
	if g.s == nil {
		s, err := stdProvider{}.GenerateSigner(ctx, alg, ref)
		if err != nil {
			return nil, err
		}
		g.s = s
	}
	if alg.Family != provider.FamilySignature {
		return nil, io.EOF
	}
	return g.s, nil
}

// ---- key agreement and KEM ----

type brokenKAProvider struct{ mode string }

func (b brokenKAProvider) NewKeyAgreement(alg *provider.Algorithm) (provider.KeyAgreement, error) {
	ka, err := stdProvider{}.NewKeyAgreement(alg)
	if err != nil {
		return nil, err
	}
	return brokenKA{ka, alg, b.mode}, nil
}

type brokenKA struct {
	provider.KeyAgreement
	alg  *provider.Algorithm
	mode string
}

func (k brokenKA) SharedSecret(peer []byte) ([]byte, error) {
	switch k.mode {
	case "truncate-peer":
		if len(peer) > k.alg.PublicKeySize {
			peer = peer[:k.alg.PublicKeySize]
		}
	case "zeros-on-error":
		s, err := k.KeyAgreement.SharedSecret(peer)
		if err != nil {
			return make([]byte, k.alg.SharedSize), nil
		}
		return s, nil
	case "hash-secret":
		s, err := k.KeyAgreement.SharedSecret(peer)
		if err != nil {
			return nil, err
		}
		h := sha256.Hash.New()
		h.Write(s)
		return h.Sum(nil), nil
	}
	return k.KeyAgreement.SharedSecret(peer)
}

type brokenKEMProvider struct{ stdProvider }

func (b brokenKEMProvider) NewDecapsulator(alg *provider.Algorithm) (provider.Decapsulator, error) {
	d, err := b.stdProvider.NewDecapsulator(alg)
	if err != nil {
		return nil, err
	}
	return paddingDecapsulator{d, alg.CiphertextSize}, nil
}

type paddingDecapsulator struct {
	provider.Decapsulator
	size int
}

func (d paddingDecapsulator) Decapsulate(ct []byte) ([]byte, error) {
	return d.Decapsulator.Decapsulate(fixNonce(ct, d.size))
}

// capsOnly lists capabilities and implements nothing else.
type capsOnly struct{ caps []provider.Capability }

func (c capsOnly) Name() string                        { return "caps-only" }
func (c capsOnly) Kind() provider.Kind                 { return provider.KindSoftware }
func (c capsOnly) Capabilities() []provider.Capability { return c.caps }
func (c capsOnly) Close() error                        { return nil }

// xorChaCha is ChaCha20 (or XChaCha20 for a 24-byte nonce) at a counter.
func xorChaCha(dst, src, key, nonce []byte, counter uint32) {
	c, err := chacha20.NewUnauthenticatedCipher(key, nonce)
	if err != nil {
		panic(err)
	}
	c.SetCounter(counter)
	c.XORKeyStream(dst, src)
}
