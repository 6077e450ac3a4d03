package auth

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/match"
)

// Certificate critical options and extensions (PROTOCOL.certkeys).
const (
	optForceCommand   = "force-command"
	optSourceAddress  = "source-address"
	optVerifyRequired = "verify-required"
)

var supportedCriticalOptions = []string{optForceCommand, optSourceAddress, optVerifyRequired}

var errNoCA = errors.New("auth: certificate not signed by a trusted CA")

// acceptCert accepts a user certificate signed by a CA of
// TrustedUserCAKeys or of a cert-authority line of authorized_keys.
func (s *decider) acceptCert(c *ssh.Certificate) (*grant, error) {
	if c.CertType != ssh.UserCert {
		return nil, reject(fmt.Sprintf("certificate of type %d is not a user certificate", c.CertType))
	}
	if !s.cfg.caAlgoAllowed(c.Signature.Format) {
		return nil, reject("certificate signature algorithm " + quote(c.Signature.Format) + " not accepted")
	}
	if err := checkKeySize(c.SignatureKey, s.cfg.minRSA); err != nil {
		return nil, err
	}
	g, err := s.certFromTrustedCAs(c)
	if g != nil || !errors.Is(err, errNoCA) {
		return g, err
	}
	return s.certFromAuthorizedKeys(c)
}

// certFromTrustedCAs checks c against TrustedUserCAKeys and the
// principals (AuthorizedPrincipalsFile, or the user name).
func (s *decider) certFromTrustedCAs(c *ssh.Certificate) (*grant, error) {
	if s.cfg.TrustedUserCAKeys == "" {
		return nil, errNoCA
	}
	trusted, err := s.isTrustedCA(c.SignatureKey)
	if err != nil {
		s.log.Warn("auth: TrustedUserCAKeys unusable", "err", err)
	}
	if err != nil || !trusted {
		return nil, errors.Join(errNoCA, err)
	}
	if s.cfg.AuthorizedPrincipalsFile == "" && !hasCommand(s.cfg.AuthorizedPrincipalsCommand) {
		return s.checkCert(c, s.user, &keyOptions{})
	}
	principal, opts, err := s.principalFromFile(c)
	if err != nil {
		return nil, err
	}
	return s.checkCert(c, principal, opts)
}

// isTrustedCA reports whether ca is in the TrustedUserCAKeys file.
func (s *decider) isTrustedCA(ca ssh.PublicKey) (bool, error) {
	data, err := readFile(s.cfg.TrustedUserCAKeys)
	if err != nil {
		return false, err
	}
	want := ca.Marshal()
	for len(data) > 0 {
		var key ssh.PublicKey
		key, _, _, data, err = ssh.ParseAuthorizedKey(data)
		if err != nil {
			return false, nil // nothing more could be parsed
		}
		if bytes.Equal(key.Marshal(), want) {
			return true, nil
		}
	}
	return false, nil
}

// principalFromFile finds a line of the AuthorizedPrincipalsFile naming a
// principal of c whose options allow this connection.
func (s *decider) principalFromFile(c *ssh.Certificate) (string, *keyOptions, error) {
	if s.cfg.AuthorizedPrincipalsFile != "" {
		path, err := userPath(s.cfg.AuthorizedPrincipalsFile, s.acct.u)
		if err != nil {
			return "", nil, err
		}
		data, err := readUserFile(path, s.acct, !s.cfg.IgnoreFileModes)
		if err != nil {
			return "", nil, err
		}
		if name, opts := s.principalIn(c, path, data); opts != nil {
			return name, opts, nil
		}
	}
	if hasCommand(s.cfg.AuthorizedPrincipalsCommand) {
		out, err := s.runCommand("AuthorizedPrincipalsCommand", s.cfg.AuthorizedPrincipalsCommand, s.cfg.AuthorizedPrincipalsCommandUser, principalsCommandTokens, c)
		if err == nil {
			if name, opts := s.principalIn(c, "AuthorizedPrincipalsCommand", out); opts != nil {
				return name, opts, nil
			}
		}
	}
	return "", nil, reject("no principal of the certificate is authorized for the user")
}

// principalIn finds a line of principals data naming a principal of c
// whose options allow this connection.
func (s *decider) principalIn(c *ssh.Certificate, source string, data []byte) (string, *keyOptions) {
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		name, opts, err := parsePrincipalsLine(string(line))
		if err != nil {
			s.log.Warn("auth: principals line ignored", "file", source, "line", n, "err", err)
			continue
		}
		if name == "" || !slices.Contains(c.ValidPrincipals, name) {
			continue
		}
		if err := opts.allows(s.addr, s.cfg.now()); err != nil {
			s.log.Info("auth: principal refused", "file", source, "line", n, "why", err)
			continue
		}
		return name, opts
	}
	return "", nil
}

// parsePrincipalsLine parses "[options] principal"; an empty name for
// blank lines and comments.
func parsePrincipalsLine(line string) (string, *keyOptions, error) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", nil, nil
	}
	if len(line) > MaxLineLength {
		return "", nil, errLineTooLong
	}
	optField, name := splitOptionsField(line)
	if name == "" {
		return line, &keyOptions{}, nil
	}
	opts, err := parseOptions(splitOptionList(optField))
	return name, opts, err
}

// splitOptionsField splits a line at the first blank outside quotes;
// rest is "" when there is none.
func splitOptionsField(line string) (field, rest string) {
	inQuote := false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '"' && (i == 0 || line[i-1] != '\\'):
			inQuote = !inQuote
		case !inQuote && (line[i] == ' ' || line[i] == '\t'):
			return line[:i], strings.TrimSpace(line[i:])
		}
	}
	return line, ""
}

// splitOptionList splits options at commas outside quotes.
func splitOptionList(field string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(field); i++ {
		switch {
		case field[i] == '"' && (i == 0 || field[i-1] != '\\'):
			inQuote = !inQuote
		case !inQuote && field[i] == ',':
			out = append(out, field[start:i])
			start = i + 1
		}
	}
	return append(out, field[start:])
}

// certFromAuthorizedKeys looks for a cert-authority line naming c's CA.
func (s *decider) certFromAuthorizedKeys(c *ssh.Certificate) (*grant, error) {
	want := c.SignatureKey.Marshal()
	var g *grant
	err := errNoCA
	s.eachAuthorizedLine(c, func(l *authorizedLine) bool {
		if !l.opts.certAuthority || !bytes.Equal(l.key.Marshal(), want) {
			return false
		}
		g, err = s.certFromLine(c, l)
		if err != nil {
			s.log.Info("auth: certificate refused", "file", l.path, "line", l.line, "why", err)
		}
		return g != nil
	})
	return g, err
}

func (s *decider) certFromLine(c *ssh.Certificate, l *authorizedLine) (*grant, error) {
	if err := l.opts.allows(s.addr, s.cfg.now()); err != nil {
		return nil, err
	}
	principal := s.user
	if l.opts.principals == nil && len(c.ValidPrincipals) == 0 {
		principal = "" // any user (certany.go)
	} else if l.opts.principals != nil {
		i := slices.IndexFunc(c.ValidPrincipals, func(p string) bool { return slices.Contains(l.opts.principals, p) })
		if i < 0 {
			return nil, reject("no principal of the certificate is in principals=")
		}
		principal = c.ValidPrincipals[i]
	}
	return s.checkCert(c, principal, l.opts)
}

// checkCert checks c's signature, validity, principal and critical
// options, and merges its restrictions with the line's options.
func (s *decider) checkCert(c *ssh.Certificate, principal string, opts *keyOptions) (*grant, error) {
	if err := s.validCert(c, principal); err != nil {
		return nil, rejectf(err, "certificate refused")
	}
	if src, ok := c.CriticalOptions[optSourceAddress]; ok && match.CIDRs(s.addr, src) != match.Matched {
		return nil, reject("client address " + s.addr.String() + " not in certificate source-address " + quote(src))
	}
	p := opts.permissions(s.user, s.cfg.PermitUserEnvironment)
	if fc, ok := c.CriticalOptions[optForceCommand]; ok {
		if opts.command != nil && *opts.command != fc {
			return nil, reject("certificate force-command and authorized command= differ")
		}
		p.ForceCommand = fc
	}
	ext := func(name string) bool { _, ok := c.Extensions[name]; return !ok }
	p.NoPTY = p.NoPTY || ext("permit-pty")
	p.NoPortForwarding = p.NoPortForwarding || ext("permit-port-forwarding")
	p.NoAgentForwarding = p.NoAgentForwarding || ext("permit-agent-forwarding")
	p.NoX11Forwarding = p.NoX11Forwarding || ext("permit-X11-forwarding")
	p.NoUserRC = p.NoUserRC || ext("permit-user-rc")
	_, verify := c.CriticalOptions[optVerifyRequired]
	return &grant{perms: p, verify: verify || opts.verify, noTouch: opts.noTouch}, nil
}
