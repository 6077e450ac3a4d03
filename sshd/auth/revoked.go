package auth

import (
	"bytes"
	"errors"

	"golang.org/x/crypto/ssh"
)

// krlMagic starts an OpenSSH binary key revocation list, which offload
// does not read.
var krlMagic = []byte("SSHKRL\n\x00")

var errKRL = errors.New("binary KRL files are not supported; list public keys instead")

// checkRevoked refuses key when it, the key in a certificate, or the
// certificate's CA is listed in Config.RevokedKeys. A RevokedKeys file
// that cannot be read refuses every key, as in OpenSSH.
func (s *decider) checkRevoked(key ssh.PublicKey) error {
	if s.cfg.RevokedKeys == "" {
		return nil
	}
	data, err := readFile(s.cfg.RevokedKeys)
	if err == nil && bytes.HasPrefix(data, krlMagic) {
		err = &FileError{s.cfg.RevokedKeys, errKRL}
	}
	if err != nil {
		s.log.Error("auth: RevokedKeys unusable: refusing all public keys", "err", err)
		return rejectf(err, "RevokedKeys unusable")
	}
	candidates := [][]byte{key.Marshal()}
	if c, ok := key.(*ssh.Certificate); ok {
		candidates = append(candidates, c.Key.Marshal(), c.SignatureKey.Marshal())
	}
	if listed(data, candidates) {
		return reject("key revoked (listed in " + s.cfg.RevokedKeys + ")")
	}
	return nil
}

// listed reports whether a public key line of data is one of blobs.
func listed(data []byte, blobs [][]byte) bool {
	for len(data) > 0 {
		key, _, _, rest, err := ssh.ParseAuthorizedKey(data)
		if err != nil {
			return false
		}
		for _, b := range blobs {
			if bytes.Equal(key.Marshal(), b) {
				return true
			}
		}
		data = rest
	}
	return false
}
