package transport

import (
	"bytes"
	"crypto/rand"
	"math/big"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/wire"
)

// Messages of the finite-field Diffie-Hellman methods (RFC 4253 §8,
// RFC 4419 §5).
const (
	msgKexDHInit     = 30
	msgKexDHReply    = 31
	msgKexGexGroup   = 31
	msgKexGexInit    = 32
	msgKexGexReply   = 33
	msgKexGexRequest = 34
)

// dhMethod is diffie-hellman-group14-sha256, group16-sha512 and
// group18-sha512 (RFC 8268): KEXDH_INIT carries e, KEXDH_REPLY K_S, f
// and the signature; H covers e, f and K as mpints.
var dhMethod = &kexMethod{steps: []kexStep{{msg: msgKexDHInit, name: "KEXDH_INIT", handle: dhReply}}}

// gexMethod is diffie-hellman-group-exchange-sha256 (RFC 4419): the
// client asks for a group size, the server picks a group from the moduli
// file, then the exchange runs in it; H also covers min, n, max, p and g.
var gexMethod = &kexMethod{steps: []kexStep{
	{msg: msgKexGexRequest, name: "KEX_DH_GEX_REQUEST", handle: gexGroup},
	{msg: msgKexGexInit, name: "KEX_DH_GEX_INIT", handle: gexReply},
}}

// readMPIntMsg decodes a message of one minimally encoded, positive mpint.
func readMPIntMsg(p []byte, what string) (*big.Int, []byte, error) {
	r := wire.NewReader(p)
	r.Byte("message")
	b := r.Bytes(what)
	if err := r.Done(); err != nil {
		return nil, nil, &DisconnectError{Reason: wire.DisconnectProtocolError, Message: "malformed " + what, Err: err}
	}
	if len(b) == 0 || b[0]&0x80 != 0 || (b[0] == 0 && (len(b) == 1 || b[1]&0x80 == 0)) {
		return nil, nil, kexError(nil, "%s: not a minimal positive mpint", what)
	}
	return new(big.Int).SetBytes(b), wire.AppendBytes(nil, b), nil
}

// dhAgree runs the server side in the group of ka: it checks e, returns
// f and K encoded as mpints.
func dhAgree(ka provider.KeyAgreement, size int, e *big.Int, name string) (f, K []byte, err error) {
	if (e.BitLen()+7)/8 > size {
		return nil, nil, kexError(nil, "%s: e is larger than the group", name)
	}
	secret, err := ka.SharedSecret(e.FillBytes(make([]byte, size)))
	if err != nil {
		return nil, nil, kexError(err, "%s: client value e rejected", name)
	}
	return wire.AppendMPInt(nil, ka.PublicKey()), wire.AppendMPInt(nil, secret), nil
}

func dhReply(s *Server, k *kexRun, p []byte) ([]byte, error) {
	e, eEnc, err := readMPIntMsg(p, "KEXDH_INIT e")
	if err != nil {
		return nil, err
	}
	spec := k.a.kex
	ka, err := s.reg.KeyAgreement(spec.agree)
	if err != nil {
		return nil, kexError(err, "%s", spec.name)
	}
	defer provider.Release(ka)
	k.prov = provenanceOf(ka)
	alg, err := provider.Lookup(spec.agree)
	if err != nil {
		return nil, err
	}
	f, K, err := dhAgree(ka, alg.PublicKeySize, e, spec.name)
	if err != nil {
		return nil, err
	}
	return signReply(s, k, msgKexDHReply, K, eEnc, f)
}

// signReply computes H over the method's fields (the host key first),
// signs it and returns the reply: K_S, the last field (Q_S or f) and the
// signature.
func signReply(s *Server, k *kexRun, msg byte, K []byte, fields ...[]byte) ([]byte, error) {
	hk := hostKeyFor(s.hostKeys, k.a.hostKey)
	if hk == nil {
		return nil, kexError(nil, "no key for host key algorithm %s", k.a.hostKey)
	}
	h, err := s.reg.Hash(k.a.kex.hash)
	if err != nil {
		return nil, kexError(err, "%s", k.a.kex.name)
	}
	H := exchangeHash(h, &k.m, hk.pub, append(fields, K)...)
	if hp := provenanceOf(h); hp != "unknown" {
		k.prov += "; " + hp // the exchange hash, as -T names it with the kex
	}
	sig, err := k.signer.SignExchange(hk.signAlg, hk.signPub, H)
	if err != nil {
		return nil, kexError(err, "signing the exchange hash")
	}
	k.res = &kexResult{H: H, K: K, h: h}
	reply := wire.AppendBytes([]byte{msg}, hk.pub)
	reply = append(reply, fields[len(fields)-1]...)
	return wire.AppendBytes(reply, sig), nil
}

// gexState is what the group exchange keeps between its two steps.
type gexState struct {
	request []byte // min, n, max as sent (uint32 each)
	p, g    *big.Int
}

// gexGroup answers KEX_DH_GEX_REQUEST (min, n, max in bits) with a
// group, as OpenSSH chooses it: the bounds are clamped to 2048..8192 and
// the smallest group of at least n bits in the moduli file is taken (the
// largest below n when none is that big), at random among its size;
// without one, the fixed group that fits max.
func gexGroup(s *Server, k *kexRun, p []byte) ([]byte, error) {
	r := wire.NewReader(p)
	r.Byte("message")
	lo, n, hi := r.Uint32("min"), r.Uint32("n"), r.Uint32("max")
	if err := r.Done(); err != nil {
		return nil, &DisconnectError{Reason: wire.DisconnectProtocolError, Message: "malformed KEX_DH_GEX_REQUEST", Err: err}
	}
	if lo > n || n > hi {
		return nil, kexError(nil, "KEX_DH_GEX_REQUEST: bad sizes min %d, n %d, max %d", lo, n, hi)
	}
	lo, hi = max(lo, minModulusBits), min(hi, maxModulusBits)
	if lo > hi {
		return nil, kexError(nil, "KEX_DH_GEX_REQUEST: no group between %d and %d bits", lo, hi)
	}
	n = min(max(n, lo), hi)
	gp, gg := chooseGroup(s.moduli, int(lo), int(n), int(hi))
	if gp == nil {
		gp, gg = fallbackGroup(int(hi))
	}
	// p is the reader's buffer, reused for the next packet: keep a copy.
	k.state = &gexState{request: bytes.Clone(p[1:13]), p: gp, g: gg}
	reply := wire.AppendMPInt([]byte{msgKexGexGroup}, gp.Bytes())
	return wire.AppendMPInt(reply, gg.Bytes()), nil
}

func chooseGroup(groups []modulus, lo, n, hi int) (p, g *big.Int) {
	best := 0
	for _, m := range groups {
		switch {
		case m.bits < lo || m.bits > hi:
		case best == 0, best < n && m.bits > best, m.bits >= n && m.bits < best:
			best = m.bits
		}
	}
	var pick []modulus
	for _, m := range groups {
		if m.bits == best {
			pick = append(pick, m)
		}
	}
	if len(pick) == 0 {
		return nil, nil
	}
	i, _ := rand.Int(rand.Reader, big.NewInt(int64(len(pick))))
	m := pick[i.Int64()]
	return m.p, m.g
}

func fallbackGroup(hi int) (p, g *big.Int) {
	name := "modp8192"
	switch {
	case hi < 3072:
		name = "modp2048"
	case hi < 6144:
		name = "modp4096"
	}
	p, g, _ = provider.FiniteFieldGroup(name)
	return p, g
}

func gexReply(s *Server, k *kexRun, p []byte) ([]byte, error) {
	st := k.state.(*gexState)
	e, eEnc, err := readMPIntMsg(p, "KEX_DH_GEX_INIT e")
	if err != nil {
		return nil, err
	}
	spec := k.a.kex
	ka, err := s.reg.GroupKeyAgreement(spec.agree, st.p, st.g)
	if err != nil {
		return nil, kexError(err, "%s", spec.name)
	}
	defer provider.Release(ka)
	k.prov = provenanceOf(ka)
	f, K, err := dhAgree(ka, (st.p.BitLen()+7)/8, e, spec.name)
	if err != nil {
		return nil, err
	}
	group := wire.AppendMPInt(wire.AppendMPInt(nil, st.p.Bytes()), st.g.Bytes())
	return signReply(s, k, msgKexGexReply, K, st.request, group, eEnc, f)
}
