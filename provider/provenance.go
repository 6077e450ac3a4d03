package provider

import (
	"crypto/cipher"
	"fmt"
	"strings"
)

// Provenance says which provider serves a primitive, where, and whether
// it is a fallback.
type Provenance struct {
	Algorithm string
	Provider  string // the registered provider's name
	Kind      Kind
	// Token and Slot say where on a PKCS #11 module the primitive lives;
	// Token is "" for primitives that live in this process.
	Token  string `json:",omitempty"`
	Serial string `json:",omitempty"`
	Slot   uint   `json:",omitempty"`
	// Fallback is true when the primitive is not served as planned: the
	// provider the policy chose first failed and a later one built it, or
	// the primitive moved away from its device mid-life (a token AEAD
	// finishing a connection in Go). FallbackFrom names what failed.
	Fallback     bool   `json:",omitempty"`
	FallbackFrom string `json:",omitempty"`
	// Reason is why the registry chose the provider (as Explain says).
	Reason string `json:",omitempty"`
	// Detail says more, in a few words ("continuing in Go after the token failed").
	Detail string `json:",omitempty"`
}

// Provenancer is implemented by primitives that can say where they are
// served. Every primitive the registry hands out implements it; provider
// primitives that live on a device implement it too, and the registry's
// answer includes theirs.
type Provenancer interface {
	Provenance() Provenance
}

// FallbackNotifier is implemented by primitives that can move to another
// implementation mid-life (a token AEAD that finishes in Go with the same
// key after its token failed). OnFallback sets f, called once each time
// the primitive (or one of its lanes) falls back, on the goroutine of the
// operation that fell back, with that operation's nonce; f must not call
// the primitive.
type FallbackNotifier interface {
	OnFallback(f func(nonce []byte, err error))
}

// OnFallback sets f on v (see FallbackNotifier), through the registry's
// wrappers; it reports whether v can fall back.
func OnFallback(v any, f func(nonce []byte, err error)) bool {
	for v != nil {
		if n, ok := v.(FallbackNotifier); ok {
			n.OnFallback(f)
			return true
		}
		u, ok := v.(interface{ Unwrap() cipher.AEAD })
		if !ok {
			return false
		}
		v = u.Unwrap()
	}
	return false
}

// ProvenanceOf returns the provenance of a primitive the registry handed
// out (an AEAD, stream, keystream, MAC, hash, key agreement, KEM side or
// signer). It reports false for values that cannot say.
func ProvenanceOf(v any) (Provenance, bool) {
	if p, ok := v.(Provenancer); ok {
		return p.Provenance(), true
	}
	return Provenance{}, false
}

// String prints the provenance on one line, as a log line would show it:
// "aes128-gcm by pkcs11 (hardware, token "unit0" slot 3)".
func (p Provenance) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s by %s (%s", p.Algorithm, p.Provider, p.Kind)
	if p.Token != "" {
		fmt.Fprintf(&b, ", token %q slot %d", p.Token, p.Slot)
	}
	b.WriteString(")")
	if p.Fallback {
		b.WriteString(", fallback")
		if p.FallbackFrom != "" {
			b.WriteString(" from " + p.FallbackFrom)
		}
	}
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	return b.String()
}

// source is the provenance fixed when the registry built a primitive, and
// the counters of its provider and algorithm (nil without metrics).
type source struct {
	Provenance
	counters [len(opNames)]*Counter
}

// provenance merges what the primitive itself says (its token, a move to
// Go) into the registry's record.
func (s *source) provenance(inner any) Provenance {
	out := s.Provenance
	if p, ok := inner.(Provenancer); ok {
		in := p.Provenance()
		out.Token, out.Serial, out.Slot = in.Token, in.Serial, in.Slot
		if in.Fallback {
			out.Fallback = true
			out.FallbackFrom = firstNonEmpty(in.FallbackFrom, out.FallbackFrom)
		}
		out.Detail = firstNonEmpty(in.Detail, out.Detail)
	}
	return out
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
