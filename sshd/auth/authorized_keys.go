package auth

import (
	"bytes"
	"errors"

	"golang.org/x/crypto/ssh"
)

// authorizedLine is one usable line of an authorized_keys file.
type authorizedLine struct {
	key  ssh.PublicKey
	opts *keyOptions
	path string
	line int
}

// errNoMatch: no line of any file accepted the key.
var errNoMatch = errors.New("auth: key not in any authorized_keys file")

// parseAuthorizedKeysLine parses one line; nil, nil for blank lines and
// comments. Unknown options make the whole line invalid.
func parseAuthorizedKeysLine(line []byte) (*authorizedLine, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] == '#' {
		return nil, nil
	}
	if len(line) > MaxLineLength {
		return nil, errLineTooLong
	}
	key, _, options, _, err := ssh.ParseAuthorizedKey(line)
	if err != nil {
		return nil, err
	}
	opts, err := parseOptions(options)
	if err != nil {
		return nil, err
	}
	return &authorizedLine{key: key, opts: opts}, nil
}

var errLineTooLong = errors.New("auth: line too long")

// eachAuthorizedLine calls fn for each usable line of the user's
// authorized_keys files, then of AuthorizedKeysCommand's output for key,
// until fn returns true. Files and lines that cannot be used are logged
// and skipped.
func (s *decider) eachAuthorizedLine(key ssh.PublicKey, fn func(*authorizedLine) bool) {
	if s.eachAuthorizedFileLine(fn) || !hasCommand(s.cfg.AuthorizedKeysCommand) {
		return
	}
	out, err := s.runCommand("AuthorizedKeysCommand", s.cfg.AuthorizedKeysCommand, s.cfg.AuthorizedKeysCommandUser, keysCommandTokens, key)
	if err == nil {
		s.eachLine("AuthorizedKeysCommand", out, fn)
	}
}

func hasCommand(line string) bool { return line != "" && line != "none" }

// eachAuthorizedFileLine is eachAuthorizedLine for the files; it reports
// whether fn stopped.
func (s *decider) eachAuthorizedFileLine(fn func(*authorizedLine) bool) bool {
	for _, pattern := range s.cfg.keyFiles {
		path, err := userPath(pattern, s.acct.u)
		if err != nil {
			s.log.Warn("auth: authorized keys file", "user", s.user, "err", err)
			continue
		}
		data, err := readUserFile(path, s.acct, !s.cfg.IgnoreFileModes)
		if err != nil {
			s.log.Warn("auth: authorized keys file ignored", "user", s.user, "err", err)
			continue
		}
		if s.eachLine(path, data, fn) {
			return true
		}
	}
	return false
}

// eachLine parses data line by line; it reports whether fn stopped.
func (s *decider) eachLine(path string, data []byte, fn func(*authorizedLine) bool) bool {
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		l, err := parseAuthorizedKeysLine(line)
		if err != nil {
			s.log.Warn("auth: authorized keys line ignored", "file", path, "line", n, "err", err)
			continue
		}
		if l == nil {
			continue
		}
		l.path, l.line = path, n
		if fn(l) {
			return true
		}
	}
	return false
}

// acceptPlainKey searches the authorized_keys files for key. A line whose
// from= or expiry-time= refuses the connection does not end the search.
func (s *decider) acceptPlainKey(key ssh.PublicKey) (*grant, error) {
	want := key.Marshal()
	var found *authorizedLine
	err := errNoMatch
	s.eachAuthorizedLine(key, func(l *authorizedLine) bool {
		if l.opts.certAuthority || !bytes.Equal(l.key.Marshal(), want) {
			return false
		}
		if err = l.opts.allows(s.addr, s.cfg.now()); err != nil {
			s.log.Info("auth: authorized key refused", "file", l.path, "line", l.line, "why", err)
			return false
		}
		found = l
		return true
	})
	if found == nil {
		return nil, err
	}
	if len(found.opts.environment) > 0 && !s.cfg.PermitUserEnvironment {
		s.log.Info("auth: environment= ignored (PermitUserEnvironment is off)", "file", found.path, "line", found.line)
	}
	return &grant{perms: found.opts.permissions(s.user, s.cfg.PermitUserEnvironment), verify: found.opts.verify, noTouch: found.opts.noTouch}, nil
}
