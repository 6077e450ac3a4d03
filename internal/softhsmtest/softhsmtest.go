// Package softhsmtest is offload's shorthand for the public test kit
// providers/pkcs11/pkcs11test: throwaway SoftHSM tokens with the label a
// test chooses. See pkcs11test for how tokens, configurations and missing
// tools are handled. (The PKCS #11 provider's own tests, which pkcs11test
// cannot serve without an import cycle, use internal/softhsm, the kit's
// implementation.)
package softhsmtest

import (
	"testing"

	"github.com/offload/offload/providers/pkcs11/pkcs11test"
)

// Token is a SoftHSM token made for a test.
type Token = pkcs11test.Token

// Default PINs of the tokens NewToken makes.
const (
	PIN   = pkcs11test.PIN
	SOPIN = pkcs11test.SOPIN
)

// NewToken makes a fresh token labelled label (unique among the tokens
// alive at once) and deletes it when the test ends; it skips the test, or
// fails it with OFFLOAD_REQUIRE_TOOLS=1, when SoftHSM is missing.
func NewToken(t testing.TB, label string) *Token {
	t.Helper()
	return pkcs11test.NewToken(t, pkcs11test.WithLabel(label))
}

// NewTokenMain is NewToken for TestMain and Example functions: it returns
// an error when SoftHSM is missing, and a function that deletes the token.
func NewTokenMain(label string) (*Token, func(), error) {
	tok, err := pkcs11test.Start(pkcs11test.WithLabel(label))
	if err != nil {
		return nil, nil, err
	}
	return tok, func() { tok.Close() }, nil
}

// Missing says what of SoftHSM is not installed, or "" when it all is.
func Missing() string { return pkcs11test.Missing() }
