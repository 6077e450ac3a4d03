package auth

import (
	"bytes"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/krl"
)

// MaxRevokedKeysSize bounds a RevokedKeys file (KRL or key list).
const MaxRevokedKeysSize = 16 << 20

// checkRevoked refuses key when Config.RevokedKeys revokes it: an
// OpenSSH KRL (package krl), or a list of public keys where the key, the
// key in a certificate or the certificate's CA is listed. A RevokedKeys
// file that cannot be read or parsed refuses every key, as in OpenSSH.
func (s *decider) checkRevoked(key ssh.PublicKey) error {
	if s.cfg.RevokedKeys == "" {
		return nil
	}
	data, err := readFileMax(s.cfg.RevokedKeys, MaxRevokedKeysSize)
	var list *krl.KRL
	if err == nil && krl.IsKRL(data) {
		if list, err = krl.Parse(data); err != nil {
			err = &FileError{s.cfg.RevokedKeys, err}
		}
	}
	if err != nil {
		s.log.Error("auth: RevokedKeys unusable: refusing all public keys", "err", err)
		return rejectf(err, "RevokedKeys unusable")
	}
	if list != nil {
		if list.Revoked(key) {
			s.logf(s.log.Error, "Authentication key %s revoked by file %s", describeKey(key), s.cfg.RevokedKeys)
			return reject("key revoked by the KRL " + s.cfg.RevokedKeys)
		}
		return nil
	}
	candidates := [][]byte{key.Marshal()}
	if c, ok := key.(*ssh.Certificate); ok {
		candidates = append(candidates, c.Key.Marshal(), c.SignatureKey.Marshal())
	}
	revoked, err := listed(data, candidates)
	if err != nil {
		err = &FileError{s.cfg.RevokedKeys, err}
		s.log.Error("auth: RevokedKeys unusable: refusing all public keys", "err", err)
		return rejectf(err, "RevokedKeys unusable")
	}
	if revoked {
		return reject("key revoked (listed in " + s.cfg.RevokedKeys + ")")
	}
	return nil
}

// listed reports whether a public key line of data is one of blobs. A
// line that is neither blank, a comment nor a public key makes the list
// unusable (an error), as OpenSSH's sshd finds it: skipping it could
// skip a revocation.
func listed(data []byte, blobs [][]byte) (bool, error) {
	found := false
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		key, _, _, _, err := ssh.ParseAuthorizedKey(line)
		if err != nil {
			return false, fmt.Errorf("line %d is not a public key", n+1)
		}
		for _, b := range blobs {
			found = found || bytes.Equal(key.Marshal(), b)
		}
	}
	return found, nil
}
