package rawclient

import (
	"crypto/rand"
	"fmt"
	"io"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// RequestService sends SERVICE_REQUEST and waits for SERVICE_ACCEPT.
func (c *Conn) RequestService(name string) error {
	if err := c.WritePacket(wire.AppendString([]byte{wire.MsgServiceRequest}, name)); err != nil {
		return err
	}
	_, err := c.Expect(wire.MsgServiceAccept)
	return err
}

// AuthRequest builds a USERAUTH_REQUEST for the ssh-connection service
// with method-specific fields appended.
func AuthRequest(user, method string, fields []byte) []byte {
	p := wire.AppendString([]byte{wire.MsgUserAuthRequest}, user)
	p = wire.AppendString(p, "ssh-connection")
	p = wire.AppendString(p, method)
	return append(p, fields...)
}

// PasswordRequest builds a password USERAUTH_REQUEST.
func PasswordRequest(user, password string) []byte {
	return AuthRequest(user, "password", wire.AppendString([]byte{0}, password))
}

// PublicKeyRequest builds a signed publickey USERAUTH_REQUEST for this
// session, with the key's default signature algorithm.
func (c *Conn) PublicKeyRequest(user string, s ssh.Signer) ([]byte, error) {
	return c.PublicKeyRequestAlgo(user, s, "")
}

// PublicKeyRequestAlgo is PublicKeyRequest with the signature algorithm
// algo ("ssh-rsa" for RSA with SHA-1, "rsa-sha2-256", ...); "" means the
// key type and the signer's default.
func (c *Conn) PublicKeyRequestAlgo(user string, s ssh.Signer, algo string) ([]byte, error) {
	pub := s.PublicKey()
	sign := s.Sign
	if algo == "" {
		algo = pub.Type()
	} else if as, ok := s.(ssh.AlgorithmSigner); ok {
		sign = func(r io.Reader, data []byte) (*ssh.Signature, error) { return as.SignWithAlgorithm(r, data, algo) }
	}
	fields := wire.AppendBool(nil, true)
	fields = wire.AppendString(fields, algo)
	fields = wire.AppendBytes(fields, pub.Marshal())
	unsigned := AuthRequest(user, "publickey", fields)
	data := wire.AppendBytes(nil, c.SessionID)
	data = append(data, unsigned...)
	sig, err := sign(rand.Reader, data)
	if err != nil {
		return nil, err
	}
	return wire.AppendBytes(unsigned, ssh.Marshal(sig)), nil
}

// AuthPublicKey requests ssh-userauth and logs in as user with s.
func (c *Conn) AuthPublicKey(user string, s ssh.Signer) error {
	if err := c.RequestService("ssh-userauth"); err != nil {
		return err
	}
	req, err := c.PublicKeyRequest(user, s)
	if err != nil {
		return err
	}
	if err := c.WritePacket(req); err != nil {
		return err
	}
	for {
		p, err := c.Next()
		if err != nil {
			return err
		}
		switch p[0] {
		case wire.MsgUserAuthBanner:
			continue
		case wire.MsgUserAuthSuccess:
			return nil
		}
		return fmt.Errorf("rawclient: authentication failed (message %d)", p[0])
	}
}
