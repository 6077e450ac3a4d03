package provider

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, matched with errors.Is. Providers' own errors match
// them too (a PKCS #11 token that never existed is ErrNotFound, one that
// went away is ErrUnavailable).
var (
	// ErrNoProvider is wrapped by errors that found no usable provider.
	ErrNoProvider = errors.New("provider: no provider")
	// ErrClosed is wrapped by the errors of a registry, a provider or a
	// primitive used after Close. Nothing reaches a device after Close.
	ErrClosed = errors.New("used after Close")
	// ErrNotFound is wrapped when what a reference names (a key, a token)
	// does not exist.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable is wrapped when what a reference names exists, or is
	// configured, but cannot be reached now (a token removed, failing, or
	// not attached yet).
	ErrUnavailable = errors.New("unavailable")
	// ErrAuthentication is wrapped by AEAD open failures: the ciphertext
	// or additional data was altered, or the key is wrong. Every other
	// error from FallibleAEAD.OpenErr is a fault of the provider.
	ErrAuthentication = errors.New("provider: message authentication failed")

	errRegistryClosed = fmt.Errorf("provider: registry %w", ErrClosed)
)

// UnknownAlgorithmError reports a name that is not in the catalog.
type UnknownAlgorithmError struct{ Name string }

func (e *UnknownAlgorithmError) Error() string {
	return fmt.Sprintf("provider: unknown algorithm %q", e.Name)
}

// WrongFamilyError reports an algorithm used through the wrong API, such as
// asking for an AEAD named "sha256".
type WrongFamilyError struct {
	Algorithm string
	Got, Want Family
}

func (e *WrongFamilyError) Error() string {
	return fmt.Sprintf("provider: algorithm %q is %s, not %s", e.Algorithm, article(e.Got.String()), article(e.Want.String()))
}

// article puts "a" or "an" before a family name.
func article(w string) string {
	if w != "" && strings.ContainsRune("aeiou", rune(w[0])) {
		return "an " + w
	}
	return "a " + w
}

// KeySizeError reports a key of the wrong length.
type KeySizeError struct {
	Algorithm string
	Got, Want int
}

func (e *KeySizeError) Error() string {
	return fmt.Sprintf("provider: %s needs a %d-byte key, got %d bytes", e.Algorithm, e.Want, e.Got)
}

// UnknownProviderError reports a pin, deny entry or lookup naming a provider
// that is not registered.
type UnknownProviderError struct{ Name string }

func (e *UnknownProviderError) Error() string {
	return fmt.Sprintf("provider: no registered provider matches %q", e.Name)
}

// UnsupportedError reports a provider asked for an algorithm it does not offer.
type UnsupportedError struct {
	Provider  string
	Algorithm string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("provider: %s does not offer %s", e.Provider, e.Algorithm)
}

// NoProviderError says why no provider could serve an algorithm.
type NoProviderError struct {
	Algorithm string
	Reason    string
}

func (e *NoProviderError) Error() string {
	return fmt.Sprintf("provider: no provider for %s: %s", e.Algorithm, e.Reason)
}

func (e *NoProviderError) Unwrap() error { return ErrNoProvider }

// PolicyError reports a malformed policy entry, naming it.
type PolicyError struct {
	Entry  string
	Reason string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("provider: bad policy entry %q: %s", e.Entry, e.Reason)
}
