package transport

import (
	"crypto/cipher"
	"encoding/binary"
	"slices"
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

// logProvenance writes the line that says which providers serve the
// connection from now on: for each direction the cipher and MAC, their
// providers and the sequence number of the first packet under them
// (seq_in, seq_out), so that the provider of any packet of the
// connection can be read from the log; args add the exchange's details.
// It runs on the reader's goroutine.
func (c *Conn) logProvenance(msg string, args ...any) {
	c.wmu.Lock()
	out, outKeys, fromOut := c.wr.c.provenance(), c.wr.keyed, c.keysFromOut
	c.wmu.Unlock()
	all := append([]any{"n", c.kexCount}, args...)
	all = append(all, "cipher_in", cipherName(c.rd.keyed), "mac_in", macName(c.rd.keyed),
		"cipher_in_provider", c.rd.c.provenance(), "seq_in", c.keysFromIn,
		"cipher_out", cipherName(outKeys), "mac_out", macName(outKeys),
		"cipher_out_provider", out, "seq_out", fromOut, "strict", c.strict)
	c.log.Info(msg, all...)
}

// watchFallback makes a token AEAD that falls back to Go mid-connection
// say so on the connection's log, with the direction and the sequence
// number of the packet it fell back on (from the GCM invocation counter:
// one per packet since the keys were installed at sequence number from).
// The line is written while the AEAD holds its lock: it asks it nothing.
func (c *Conn) watchFallback(pc packetCipher, dir string, from uint32) {
	g, ok := pc.(*gcmCipher)
	if !ok {
		return
	}
	start := binary.BigEndian.Uint64(g.nonce[4:])
	provider.OnFallback(g.aead, func(nonce []byte, err error) {
		seq := from
		if len(nonce) == len(g.nonce) {
			seq += uint32(binary.BigEndian.Uint64(nonce[4:]) - start)
		}
		c.log.Warn("transport: token fallback: the packet cipher continues in Go with the same key",
			"direction", dir, "seq", seq, "err", err)
	})
	noteOrigin(g.aead, c.id, dir, from, g.nonce[:])
}

// OriginNoter is implemented by an AEAD served in another process (a
// post-auth process's AEAD on a token, served by the monitor): it is
// told which packets it protects — the connection, the direction ("in"
// or "out"), and the sequence number of the packet sealed or opened
// under nonce, the nonce of the first packet under these keys — so that
// the lines of the process that serves it (a token fallback) name the
// connection and the packet, as this process's lines do.
type OriginNoter interface {
	NoteOrigin(conn uint64, direction string, seq uint32, nonce []byte)
}

// noteOrigin tells a (possibly wrapped) AEAD its origin, when it takes it.
func noteOrigin(a cipher.AEAD, conn uint64, dir string, seq uint32, nonce []byte) {
	for a != nil {
		if n, ok := a.(OriginNoter); ok {
			n.NoteOrigin(conn, dir, seq, slices.Clone(nonce))
			return
		}
		u, ok := a.(interface{ Unwrap() cipher.AEAD })
		if !ok {
			return
		}
		a = u.Unwrap()
	}
}

func cipherName(k keyed) string {
	if k.cipher == nil {
		return "none"
	}
	return k.cipher.name
}

// macName is the MAC of k, "implicit" for a cipher that authenticates
// itself.
func macName(k keyed) string {
	if k.mac == nil {
		return "implicit"
	}
	return k.mac.name
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
