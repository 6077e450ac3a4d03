package rawclient

import (
	"crypto/rand"
	"fmt"

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
// session.
func (c *Conn) PublicKeyRequest(user string, s ssh.Signer) ([]byte, error) {
	pub := s.PublicKey()
	algo := pub.Type()
	fields := wire.AppendBool(nil, true)
	fields = wire.AppendString(fields, algo)
	fields = wire.AppendBytes(fields, pub.Marshal())
	unsigned := AuthRequest(user, "publickey", fields)
	data := wire.AppendBytes(nil, c.SessionID)
	data = append(data, unsigned...)
	sig, err := s.Sign(rand.Reader, data)
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
