package auth

import (
	"errors"
	"slices"
	"time"

	"golang.org/x/crypto/ssh"
)

// A user certificate that names no principal is valid for any user under
// an authorized_keys cert-authority line without principals= (the line
// already names the account: sshd(8), AUTHORIZED_KEYS FILE FORMAT);
// TrustedUserCAKeys and principals= still require a named principal.
// x/crypto's CertChecker refuses every certificate without principals, so
// that one case is checked here: the same checks, less the principal.

// validCert checks c as CertChecker does, for principal, or, when
// principal is "", for a certificate that names no principal.
func (s *decider) validCert(c *ssh.Certificate, principal string) error {
	checker := &ssh.CertChecker{SupportedCriticalOptions: supportedCriticalOptions, Clock: s.cfg.now}
	if principal != "" {
		return checker.CheckCert(principal, c)
	}
	return checkCertAnyUser(c, checker.SupportedCriticalOptions, s.cfg.now())
}

// checkCertAnyUser checks a certificate without principals: its critical
// options, its validity at now and the CA's signature.
func checkCertAnyUser(c *ssh.Certificate, supported []string, now time.Time) error {
	if len(c.ValidPrincipals) != 0 {
		return errors.New("auth: certificate names principals")
	}
	for opt := range c.CriticalOptions {
		if !slices.Contains(supported, opt) {
			return errors.New("auth: unsupported critical option " + quote(opt) + " in certificate")
		}
	}
	if t := now.Unix(); int64(c.ValidAfter) < 0 || t < int64(c.ValidAfter) {
		return errors.New("auth: certificate is not yet valid")
	}
	if t := now.Unix(); c.ValidBefore != ssh.CertTimeInfinity && (int64(c.ValidBefore) < 0 || t >= int64(c.ValidBefore)) {
		return errors.New("auth: certificate has expired")
	}
	if c.Signature == nil || c.SignatureKey == nil || c.SignatureKey.Verify(certSignedBytes(c), c.Signature) != nil {
		return errors.New("auth: certificate signature does not verify")
	}
	return nil
}

// certSignedBytes is what the CA signed: the certificate's encoding up to
// its signature (PROTOCOL.certkeys), that is without the signature's
// length-prefixed string at the end.
func certSignedBytes(c *ssh.Certificate) []byte {
	unsigned := *c
	unsigned.Signature = nil
	b := unsigned.Marshal()
	return b[:len(b)-4]
}
