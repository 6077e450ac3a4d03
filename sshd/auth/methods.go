package auth

import (
	"bytes"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/perm"
)

// grant is an accepted key or certificate and what comes with it.
type grant struct {
	perms *perm.Permissions
	// verify says the signature must assert user verification
	// (verify-required); noTouch waives user presence (no-touch-required).
	verify, noTouch bool
}

// publicKey handles the "publickey" method (RFC 4252 §7): a query without
// signature gets PK_OK when the key would be accepted; a signed request
// succeeds when the key is accepted and the signature verifies.
func (s *decider) publicKey(req *Request) (outcome, *perm.Permissions) {
	if k, err := ssh.ParsePublicKey(req.KeyBlob); err == nil {
		s.info = describeKey(k)
	}
	key, sig, err := s.checkSignedKey(req)
	if err != nil {
		return s.fail(req, err), nil
	}
	g, err := s.acceptQueried(req, key)
	if err != nil {
		return s.fail(req, err), nil
	}
	if !req.HasSig {
		s.queried = &queriedKey{user: s.user, blob: bytes.Clone(req.KeyBlob), grant: g}
		return keyOK, nil // PK_OK; never authentication
	}
	if err := checkFlags(key, sig, g); err != nil {
		return s.fail(req, err), nil
	}
	g.perms.Method, g.perms.KeyFingerprint = methodPublicKey, fingerprint(key)
	g.perms.AuthInfo = []string{publicKeyInfo(req.KeyBlob, sig)}
	if s.usedKeys[g.perms.KeyFingerprint] {
		return s.fail(req, reject("key already used for an earlier authentication method")), nil
	}
	s.usedKeys[g.perms.KeyFingerprint] = true
	return succeeded, g.perms
}

// queriedKey is a key a query was just told is acceptable, and why.
type queriedKey struct {
	user  string
	blob  []byte
	grant *grant
}

// acceptQueried is acceptKey, except that the signed request clients
// send right after a query for the same key takes the query's answer
// (once) instead of reading the authorized_keys files (or running the
// keys command) a second time: the files are read as the user, a dozen
// system calls that were a tenth of the monitor's work in a login.
func (s *decider) acceptQueried(req *Request, key ssh.PublicKey) (*grant, error) {
	q := s.queried
	s.queried = nil
	if req.HasSig && q != nil && q.user == s.user && bytes.Equal(q.blob, req.KeyBlob) {
		return q.grant, nil
	}
	return s.acceptKey(key)
}

// checkSignedKey parses the key and verifies the signature, if any,
// before looking at the account, so that refused and unknown users cost
// the same signature check as real ones.
func (s *decider) checkSignedKey(req *Request) (ssh.PublicKey, *signature, error) {
	key, algo, err := s.cfg.parseKey(req.Algo, req.KeyBlob)
	if err != nil {
		return nil, nil, err
	}
	var sig *signature
	if req.HasSig {
		if sig, err = s.verify(req, key, algo); err != nil {
			return nil, nil, err
		}
	}
	if s.acct.denied != nil {
		return nil, nil, s.acct.denied
	}
	return key, sig, nil
}

// verify checks the request's signature: its format must be the one the
// algorithm implies, and it must cover this session's identifier.
func (s *decider) verify(req *Request, key ssh.PublicKey, algo *algorithm) (*signature, error) {
	sig, err := parseSignature(req.Sig)
	if err != nil {
		return nil, rejectf(err, "malformed signature")
	}
	if sig.Format != algo.sigFormat {
		return nil, reject("signature format " + quote(sig.Format) + " for algorithm " + quote(req.Algo))
	}
	data := signedData(s.sessionID, req)
	if isSKKey(key) {
		sig.sk = true
		sig.flags, err = verifySK(key, data, sig)
	} else if len(sig.Rest) != 0 {
		// x/crypto's Verify ignores bytes after the blob; only security-key
		// signatures carry more (flags and counter).
		return nil, reject("trailing bytes after the signature blob")
	} else {
		err = key.Verify(data, &ssh.Signature{Format: sig.Format, Blob: sig.Blob, Rest: sig.Rest})
	}
	if err != nil {
		return nil, rejectf(err, "signature does not verify")
	}
	return sig, nil
}

// checkFlags applies the security-key flags: presence unless waived by
// no-touch-required, verification when verify-required (which other
// signatures can never satisfy).
func checkFlags(key ssh.PublicKey, sig *signature, g *grant) error {
	if sig.sk && sig.flags&flagUserPresent == 0 && !g.noTouch && !certNoTouch(key) {
		return reject("security-key signature without user presence (touch)")
	}
	if g.verify && sig.flags&flagUserVerified == 0 { // zero unless sk
		return reject("verify-required but the signature lacks user verification")
	}
	return nil
}

// acceptKey decides whether key (a plain key or a certificate) may log in
// as the session's user.
func (s *decider) acceptKey(key ssh.PublicKey) (*grant, error) {
	if err := s.checkRevoked(key); err != nil {
		return nil, err
	}
	var g *grant
	var err error
	if c, ok := key.(*ssh.Certificate); ok {
		g, err = s.acceptCert(c)
	} else {
		g, err = s.acceptPlainKey(key)
	}
	if err != nil {
		return nil, err
	}
	if err := s.cfg.rootAllows(s.acct, "publickey", g.perms.ForceCommand != ""); err != nil {
		return nil, err
	}
	return g, nil
}

// fail logs why req failed and returns the outcome.
func (s *decider) fail(req *Request, why error) outcome {
	s.log.Debug("auth: "+req.Method+" refused", "user", req.User, "algo", req.Algo, "why", why)
	return failed
}

func fingerprint(key ssh.PublicKey) string {
	if c, ok := key.(*ssh.Certificate); ok {
		return ssh.FingerprintSHA256(c.Key)
	}
	return ssh.FingerprintSHA256(key)
}
