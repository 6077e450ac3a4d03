package transport

import (
	"strings"

	"github.com/offload/offload/provider"
)

// Provenance: which provider serves what on a connection. Each packet
// cipher names the providers of the registry primitives it is assembled
// from (as they say themselves, fallbacks included); the key exchange
// names the provider the registry chose for its key agreement (and KEM);
// the host-key signer names where the host key lives.

// HostKeyProvenancer is implemented by HostKeySigners that can say which
// provider holds a host key.
type HostKeyProvenancer interface {
	HostKeyProvenance(pub []byte) string
}

// provenanceOf describes the providers of prims, one "alg by provider"
// each.
func provenanceOf(prims ...any) string {
	var parts []string
	for _, p := range prims {
		if p == nil {
			continue
		}
		if pv, ok := provider.ProvenanceOf(p); ok {
			parts = append(parts, pv.String())
		}
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, "; ")
}

// hostKeyProvenance says where the host key pub lives, when the signer
// can tell.
func hostKeyProvenance(s HostKeySigner, pub []byte) string {
	if hp, ok := s.(HostKeyProvenancer); ok {
		return hp.HostKeyProvenance(pub)
	}
	return "unknown"
}

func (c *gcmCipher) provenance() string    { return provenanceOf(c.aead) }
func (c *chachaCipher) provenance() string { return provenanceOf(c.main, c.mac) }
func (c *etmCipher) provenance() string    { return provenanceOf(c.stream, c.mac) }
func (c *eamCipher) provenance() string    { return provenanceOf(c.stream, c.mac) }
func (noneCipher) provenance() string      { return "none" }
