package transport

import (
	"crypto"

	"golang.org/x/crypto/ssh"
)

// WireSigner is a host key (a crypto.Signer) that makes SSH signatures
// itself, from the data rather than from a digest: a key held by an
// ssh-agent (sshd_config HostKeyAgent), which is sent the data and a
// signature algorithm and answers with the SSH signature.
// NewHostKeySigner uses its SSHSigner instead of wrapping the
// crypto.Signer with x/crypto/ssh.
type WireSigner interface {
	crypto.Signer
	SSHSigner() ssh.AlgorithmSigner
}

// wireSigner is the SSH signer of the host key s.
func wireSigner(s crypto.Signer) (ssh.Signer, error) {
	if ws, ok := s.(WireSigner); ok {
		return ws.SSHSigner(), nil
	}
	return ssh.NewSignerFromSigner(s)
}
