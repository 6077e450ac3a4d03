package transport

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// OpenSSH's extensions of the transport (PROTOCOL, sections 1.9 and 2.5).
const (
	msgPing = 192 // SSH2_MSG_PING
	msgPong = 193 // SSH2_MSG_PONG

	// HostKeysRequest is the global request that tells the client every
	// host key; HostKeysProveRequest is the client's request for proof.
	HostKeysRequest      = "hostkeys-00@openssh.com"
	HostKeysProveRequest = "hostkeys-prove-00@openssh.com"

	// maxPingData bounds the data of a PING we answer.
	maxPingData = 4096
	// maxProveKeys bounds the keys one prove request may name.
	maxProveKeys = 64
)

// HostKeyProver is the optional capability of a HostKeySigner that can
// answer hostkeys-prove-00@openssh.com: a signature by the host key pub
// over string "hostkeys-prove-00@openssh.com" || string session_id ||
// string pub. A signer in another process (the monitor) must build that
// data itself from its own record of the connection's session id and
// refuse a sessionID that differs from it.
type HostKeyProver interface {
	SignHostKeyProof(alg string, pub, sessionID []byte) ([]byte, error)
}

// hostKeyProofData is what a hostkeys-prove signature covers.
func hostKeyProofData(pub, sessionID []byte) []byte {
	b := wire.AppendString(nil, HostKeysProveRequest)
	b = wire.AppendBytes(b, sessionID)
	return wire.AppendBytes(b, pub)
}

func (ls *localSigner) SignHostKeyProof(alg string, pub, sessionID []byte) ([]byte, error) {
	return ls.SignExchange(alg, pub, hostKeyProofData(pub, sessionID))
}

// extInfoMsg encodes SSH_MSG_EXT_INFO (RFC 8308): server-sig-algs,
// ping@openssh.com and, when user authentication verifies it,
// publickey-hostbound@openssh.com.
func (s *Server) extInfoMsg() []byte {
	ext := [][2]string{{"server-sig-algs", strings.Join(s.sigAlgs, ",")}, {"ping@openssh.com", "0"}}
	if s.hostBound {
		ext = append(ext, [2]string{"publickey-hostbound@openssh.com", "0"})
	}
	p := wire.AppendUint32([]byte{wire.MsgExtInfo}, uint32(len(ext)))
	for _, e := range ext {
		p = wire.AppendString(wire.AppendString(p, e[0]), e[1])
	}
	return p
}

// InitialHostKey returns the host public key (wire format) the first key
// exchange was signed with: what publickey-hostbound-v00@openssh.com
// requests must name.
func (c *Conn) InitialHostKey() []byte { return c.initialHostKey }

// SetAuthenticated tells the transport that user authentication has
// succeeded: from then on it answers ping@openssh.com, which OpenSSH
// refuses before authentication, starts the re-exchanges it held during
// authentication and paces the client's (rekeypace.go). Sending
// USERAUTH_SUCCESS does the same; a resumed connection is authenticated.
func (c *Conn) SetAuthenticated() { c.authenticated.Store(true) }

// HostKeysAnnouncement returns the global request hostkeys-00@openssh.com
// (no reply wanted) that tells the client every host key, those held in a
// token and those whose algorithm this connection did not negotiate
// included, so that a client with UpdateHostKeys learns them.
func (c *Conn) HostKeysAnnouncement() []byte {
	p := wire.AppendString([]byte{wire.MsgGlobalRequest}, HostKeysRequest)
	p = wire.AppendBool(p, false)
	for _, k := range c.srv.allHostKeys {
		p = wire.AppendBytes(p, k)
	}
	return p
}

// ErrNoProver is returned by ProveHostKeys when the connection's
// HostKeySigner cannot make hostkeys-prove signatures.
var ErrNoProver = errors.New("transport: the host-key signer cannot prove host keys")

// ProveHostKeys answers the data of a hostkeys-prove-00@openssh.com
// request (the host keys the client wants proven, each a string) with
// the data of the REQUEST_SUCCESS: a signature per key, in order. A key
// this server does not hold, or more than 64 of them, is an error (answer
// REQUEST_FAILURE). RSA keys sign with rsa-sha2-512 unless the client
// listed only rsa-sha2-256 among the two.
func (c *Conn) ProveHostKeys(data []byte) ([]byte, error) {
	prover, ok := c.signer.(HostKeyProver)
	if !ok {
		return nil, ErrNoProver
	}
	r := wire.NewReader(data)
	var out []byte
	for n := 0; r.Len() > 0; n++ {
		if n == maxProveKeys {
			return nil, fmt.Errorf("transport: more than %d keys to prove", maxProveKeys)
		}
		blob := r.Bytes("hostkey")
		if r.Err() != nil {
			return nil, fmt.Errorf("transport: malformed %s: %w", HostKeysProveRequest, r.Err())
		}
		if !slices.ContainsFunc(c.srv.allHostKeys, func(k []byte) bool { return string(k) == string(blob) }) {
			return nil, fmt.Errorf("transport: %s names a key this server does not hold", HostKeysProveRequest)
		}
		pub, err := ssh.ParsePublicKey(blob)
		if err != nil {
			return nil, fmt.Errorf("transport: %s: %w", HostKeysProveRequest, err)
		}
		sig, err := prover.SignHostKeyProof(c.proofAlgorithm(pub.Type()), blob, c.sessionID)
		if err != nil {
			return nil, err
		}
		out = wire.AppendBytes(out, sig)
	}
	return out, nil
}

// proofAlgorithm is the signature algorithm for a key of type keyType.
func (c *Conn) proofAlgorithm(keyType string) string {
	if keyType != ssh.KeyAlgoRSA {
		return keyType
	}
	if !slices.Contains(c.clientHostKeyAlgs, ssh.KeyAlgoRSASHA512) && slices.Contains(c.clientHostKeyAlgs, ssh.KeyAlgoRSASHA256) {
		return ssh.KeyAlgoRSASHA256
	}
	return ssh.KeyAlgoRSASHA512
}

// answerPing sends PONG with the data of a PING after authentication;
// before it, and beyond maxPingData, the PING is dropped as OpenSSH drops
// it.
func (c *Conn) answerPing(p []byte) error {
	r := wire.NewReader(p[1:])
	data := r.Bytes("data")
	if err := r.Done(); err != nil {
		return &DisconnectError{Reason: wire.DisconnectProtocolError, Message: "malformed PING", Err: err}
	}
	if !c.authenticated.Load() || len(data) > maxPingData {
		return nil
	}
	return c.WritePacket(wire.AppendBytes([]byte{msgPong}, data))
}
