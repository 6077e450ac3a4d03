package transport

import (
	"hash"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/wire"
)

// kexResult is the outcome of the exchange proper.
type kexResult struct {
	H []byte    // exchange hash
	K []byte    // shared secret, encoded for hashing
	h hash.Hash // the exchange's hash, reused for key derivation
}

// handshakeMagics are the inputs of the exchange hash common to every
// method: V_C, V_S, I_C, I_S.
type handshakeMagics struct {
	vC, vS, iC, iS []byte
}

// parseKexECDHInit decodes SSH_MSG_KEX_ECDH_INIT (and the hybrid
// SSH_MSG_KEX_HYBRID_INIT, which has the same number and shape).
func parseKexECDHInit(p []byte) ([]byte, error) {
	r := wire.NewReader(p)
	if t := r.Byte("message"); t != wire.MsgKexECDHInit {
		return nil, protocolError("expected KEX_ECDH_INIT, got message %d", t)
	}
	q := r.Bytes("Q_C")
	if err := r.Done(); err != nil {
		return nil, &DisconnectError{Reason: wire.DisconnectProtocolError, Message: "malformed KEX_ECDH_INIT", Err: err}
	}
	return q, nil
}

// agree runs the server side of the key agreement for spec on the
// client's public value qC, returning Q_S and K (encoded), and noting in
// kr which providers served it.
func agree(reg *provider.Registry, kr *kexRun, spec *kexSpec, qC []byte) (qS, k []byte, err error) {
	if spec.kem != "" {
		return agreeHybrid(reg, kr, spec, qC)
	}
	alg, err := provider.Lookup(spec.agree)
	if err != nil {
		return nil, nil, err
	}
	if len(qC) != alg.PublicKeySize {
		return nil, nil, kexError(nil, "%s: client public value is %d bytes, want %d", spec.name, len(qC), alg.PublicKeySize)
	}
	ka, err := reg.KeyAgreement(spec.agree)
	if err != nil {
		return nil, nil, kexError(err, "%s", spec.name)
	}
	defer provider.Release(ka)
	kr.prov = provenanceOf(ka)
	secret, err := ka.SharedSecret(qC)
	if err != nil {
		return nil, nil, kexError(err, "%s: client public value rejected", spec.name)
	}
	return ka.PublicKey(), wire.AppendMPInt(nil, secret), nil
}

// agreeHybrid is a post-quantum KEM joined with an elliptic-curve
// exchange: mlkem768x25519-sha256 and mlkem768nistp256-sha256
// (draft-ietf-sshm-mlkem-hybrid-kex), sntrup761x25519-sha512 (and its
// @openssh.com name, draft-josefsson-ntruprime-ssh). C_INIT = KEM
// encapsulation key || ECDH public key; S_REPLY = KEM ciphertext || ECDH
// public key; K = HASH(K_PQ || K_CL), encoded as a string rather than an
// mpint.
func agreeHybrid(reg *provider.Registry, kr *kexRun, spec *kexSpec, qC []byte) (qS, k []byte, err error) {
	kem, err := provider.Lookup(spec.kem)
	if err != nil {
		return nil, nil, err
	}
	ec, err := provider.Lookup(spec.agree)
	if err != nil {
		return nil, nil, err
	}
	if len(qC) != kem.PublicKeySize+ec.PublicKeySize {
		return nil, nil, kexError(nil, "%s: client public value is %d bytes, want %d", spec.name, len(qC), kem.PublicKeySize+ec.PublicKeySize)
	}
	kPQ, ct, kemProv, err := reg.EncapsulateProvenance(spec.kem, qC[:kem.PublicKeySize])
	if err != nil {
		return nil, nil, kexError(err, "%s: encapsulation key rejected", spec.name)
	}
	ka, err := reg.KeyAgreement(spec.agree)
	if err != nil {
		return nil, nil, kexError(err, "%s", spec.name)
	}
	defer provider.Release(ka)
	kr.prov = kemProv.String() + "; " + provenanceOf(ka)
	kCL, err := ka.SharedSecret(qC[kem.PublicKeySize:])
	if err != nil {
		return nil, nil, kexError(err, "%s: client %s key rejected", spec.name, spec.agree)
	}
	h, err := reg.Hash(spec.hash)
	if err != nil {
		return nil, nil, kexError(err, "%s", spec.name)
	}
	h.Write(kPQ)
	h.Write(kCL)
	qS = append(append([]byte(nil), ct...), ka.PublicKey()...)
	return qS, wire.AppendBytes(nil, h.Sum(nil)), nil
}

// exchangeHash computes H over the magics, K_S, the method's own fields
// (already encoded: strings, mpints, uint32s) and K (encoded).
func exchangeHash(h hash.Hash, m *handshakeMagics, kS []byte, fields ...[]byte) []byte {
	var b []byte
	for _, v := range [][]byte{m.vC, m.vS, m.iC, m.iS, kS} {
		b = wire.AppendBytes(b, v)
	}
	for _, f := range fields {
		b = append(b, f...)
	}
	h.Reset()
	h.Write(b)
	return h.Sum(nil)
}

// ecdhMethod is the one-message exchange of RFC 5656 §4, shared by
// curve25519-sha256 (RFC 8731) and the hybrid post-quantum methods:
// KEX_ECDH_INIT carries Q_C, KEX_ECDH_REPLY K_S, Q_S and the signature.
var ecdhMethod = &kexMethod{steps: []kexStep{{msg: wire.MsgKexECDHInit, name: "KEX_ECDH_INIT", handle: ecdhReply}}}

// ecdhReply answers the client's KEX_ECDH_INIT in p: it agrees on K,
// signs H with the host key and returns the reply to send.
func ecdhReply(s *Server, k *kexRun, p []byte) ([]byte, error) {
	qC, err := parseKexECDHInit(p)
	if err != nil {
		return nil, err
	}
	qS, K, err := agree(s.reg, k, k.a.kex, qC)
	if err != nil {
		return nil, err
	}
	return signReply(s, k, wire.MsgKexECDHReply, K, wire.AppendBytes(nil, qC), wire.AppendBytes(nil, qS))
}
