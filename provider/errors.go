package provider

import (
	"errors"
	"fmt"
)

// ErrNoProvider is wrapped by errors that found no usable provider.
var ErrNoProvider = errors.New("provider: no provider")

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
	return fmt.Sprintf("provider: algorithm %q is a %s, not a %s", e.Algorithm, e.Got, e.Want)
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
