// Package pkcs11test makes throwaway SoftHSM tokens for tests of code that
// uses PKCS #11 — offload's own, or yours:
//
//	func TestMyServer(t *testing.T) {
//		tok := pkcs11test.NewToken(t)
//		keyURI := tok.GenerateKey(t, pkcs11.ECDSAP256, "web")
//		// keyURI names the key, with module-path and pin-source: hand it
//		// to pkcs11.OpenURI, a provider.Registry, a configuration file.
//	}
//
// The token, its PIN file and its SoftHSM configuration live in temporary
// directories and are removed when the test ends.
//
// # One SoftHSM configuration at a time
//
// SoftHSM reads its configuration (SOFTHSM2_CONF) when the module is
// initialized, and a process initializes a module once, so the tokens
// alive at the same moment in a test binary share one configuration. The
// first token made when none is alive starts a fresh configuration in a
// temporary directory and sets SOFTHSM2_CONF for the process; tokens made
// while it lives join it; when the last of them is deleted, the directory
// is removed and SOFTHSM2_CONF restored. Tests that run one after another
// so each get their own; parallel tests share one (the default labels are
// unique). Subprocesses inherit SOFTHSM2_CONF, or take Token.Environ.
//
// SoftHSM shows tokens created after C_Initialize only to a new
// C_Initialize; offload's PKCS #11 provider does that by itself when a
// token it is asked for is missing.
//
// # Missing SoftHSM
//
// Without softhsm2-util or libsofthsm2.so, NewToken skips the test — or
// fails it when OFFLOAD_REQUIRE_TOOLS=1, as offload's CI sets. Start, for
// Example and TestMain functions, returns an error wrapping ErrMissing
// instead.
//
// PINs are throwaway values given to softhsm2-util on its command line
// (it reads them from nowhere else); URIs reach tokens through pin-source
// files, so PINs appear in no URI, log or test output.
package pkcs11test

import (
	"context"
	"crypto"
	"testing"

	"github.com/offload/offload/internal/softhsm"
	"github.com/offload/offload/providers/pkcs11"
)

// Token is a SoftHSM token made for a test. Its fields, from the
// implementation, are:
//
//	Label    string // the token's label (CKA_LABEL of its CK_TOKEN_INFO)
//	PIN      string // the user PIN, also in PINFile
//	SOPIN    string // the security officer PIN
//	Module   string // path of libsofthsm2.so
//	PINFile  string // holds PIN (mode 0600); URIs name it as pin-source
//	Dir      string // the token's own temporary directory
//	ConfPath string // its SoftHSM configuration (SOFTHSM2_CONF)
type Token struct {
	*softhsm.Token
}

// URI is the pkcs11: URI of the key pair labelled object on the token
// (object "": the token itself), with module-path and pin-source (never
// pin-value): what pkcs11.OpenURI, provider.Registry.Signer and a
// configuration file take.
func (tok *Token) URI(object string) string { return tok.Token.URI(object) }

// TokenURI is the URI of the token itself, with module-path and
// pin-source.
func (tok *Token) TokenURI() string { return tok.Token.TokenURI() }

// Import stores key (anything x509.MarshalPKCS8PrivateKey takes) on the
// token labelled object, from outside the test process with
// softhsm2-util, as an administrator restoring a backup would, and
// returns its URI. The key gets CKA_ID 01.
func (tok *Token) Import(t testing.TB, key crypto.PrivateKey, object string) string {
	t.Helper()
	return tok.Token.Import(t, key, object)
}

// Delete removes the token, as pulling a device out would, even while
// the test process has it open.
func (tok *Token) Delete(t testing.TB) {
	t.Helper()
	tok.Token.Delete(t)
}

// Recreate makes the token again after Delete, empty: a new serial, the
// same label and PINs. offload's provider finds it again by itself.
func (tok *Token) Recreate(t testing.TB) {
	t.Helper()
	tok.Token.Recreate(t)
}

// Environ is the environment a subprocess needs to see the token
// (SOFTHSM2_CONF).
func (tok *Token) Environ() []string { return tok.Token.Environ() }

// Close deletes the token (and, for the last token of its SoftHSM
// configuration, the configuration). NewToken's tokens are closed when
// their test ends; Start's by the caller. It may be called more than once.
func (tok *Token) Close() error { return tok.Token.Close() }

// Option changes how NewToken and Start make a token.
type Option = softhsm.Option

// Default PINs of the tokens NewToken makes.
const (
	PIN   = softhsm.PIN
	SOPIN = softhsm.SOPIN
)

// ErrMissing is wrapped by Start's error when SoftHSM is not installed.
var ErrMissing = softhsm.ErrMissing

// WithLabel sets the token's label (at most 32 bytes), unique among the
// tokens alive at once. Without it, a unique label is made from the
// test's name.
func WithLabel(label string) Option { return softhsm.WithLabel(label) }

// WithPIN sets the user PIN.
func WithPIN(pin string) Option { return softhsm.WithPIN(pin) }

// Missing says what of SoftHSM is not installed, or "" when it all is.
func Missing() string { return softhsm.Missing() }

// NewToken makes a fresh token for t and deletes it when t ends. It skips
// t when SoftHSM is missing (fails it with OFFLOAD_REQUIRE_TOOLS=1).
func NewToken(t testing.TB, opts ...Option) *Token {
	t.Helper()
	return &Token{softhsm.NewToken(t, opts...)}
}

// Start is NewToken for Example and TestMain functions, which have no
// testing.TB: it fails with ErrMissing when SoftHSM is not installed, and
// the caller deletes the token with Close.
func Start(opts ...Option) (*Token, error) {
	tok, err := softhsm.Start(opts...)
	if err != nil {
		return nil, err
	}
	return &Token{tok}, nil
}

// GenerateKey makes a key pair of type kt labelled object on the token,
// inside it, through offload's PKCS #11 provider, and returns its URI
// (with module-path and pin-source).
func (tok *Token) GenerateKey(t testing.TB, kt pkcs11.KeyType, object string) string {
	t.Helper()
	ref, err := tok.Generate(kt, object)
	if err != nil {
		t.Fatalf("pkcs11test: %v", err)
	}
	return ref
}

// Generate is GenerateKey returning an error, for Example functions.
func (tok *Token) Generate(kt pkcs11.KeyType, object string) (string, error) {
	ref := tok.URI(object)
	p, err := pkcs11.OpenURI(ref, pkcs11.Config{HealthInterval: -1})
	if err != nil {
		return "", err
	}
	defer p.Close()
	if _, err := p.Generate(context.Background(), ref, kt); err != nil {
		return "", err
	}
	return ref, nil
}
