package auth

import (
	"bytes"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/perm"
)

// methodHostBound is OpenSSH's publickey method bound to the server's
// host key (PROTOCOL, section 3.1): the request names the host key of the
// connection's first key exchange and the signature covers it, so a
// signature made through a forwarded agent cannot be replayed to another
// host. The transport announces it in EXT_INFO as
// publickey-hostbound@openssh.com; it counts as "publickey" for
// AuthenticationMethods and in logs, as in OpenSSH.
const methodHostBound = "publickey-hostbound-v00@openssh.com"

// policyMethod is the name a method counts as for AuthenticationMethods,
// the answers and the logs.
func policyMethod(m string) string {
	if m == methodHostBound {
		return methodPublicKey
	}
	return m
}

// parseHostBound reads the fields of a host-bound request: those of
// publickey with the server host key between the key and the signature.
func (req *Request) parseHostBound(r *reader) {
	req.HasSig = r.Bool("has signature")
	req.Algo = r.string("public key algorithm", maxNameLen)
	req.KeyBlob = r.bytes("public key blob", maxKeyBlobLen)
	req.HostKey = r.bytes("server host key", maxKeyBlobLen)
	if req.HasSig {
		req.Sig = r.bytes("signature", maxSigLen)
	}
}

// hostBound handles publickey-hostbound-v00@openssh.com: the named host
// key must be this connection's, then it is the publickey method.
func (s *decider) hostBound(req *Request) (outcome, *perm.Permissions) {
	if s.hostKey == nil {
		return s.fail(req, reject("host-bound public key authentication without a known host key")), nil
	}
	if !sameHostKey(req.HostKey, s.hostKey) {
		return s.fail(req, reject("the request names a host key other than this connection's")), nil
	}
	return s.publicKey(req)
}

// sameHostKey reports whether the wire-form keys a and b are the same
// public key, a certificate standing for the key it certifies.
func sameHostKey(a, b []byte) bool {
	ka, err := ssh.ParsePublicKey(a)
	if err != nil {
		return false
	}
	kb, err := ssh.ParsePublicKey(b)
	if err != nil {
		return false
	}
	return bytes.Equal(plainKey(ka).Marshal(), plainKey(kb).Marshal())
}
