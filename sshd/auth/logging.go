package auth

import (
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/sshlog"
)

// Log lines are written in OpenSSH's words (the message of each record is
// the text OpenSSH's sshd logs for the same event, so that tools such as
// fail2ban read them), with structured attributes beside: the client's
// address and port (from the connection's logger) and "event", "user",
// "method" where they apply. What OpenSSH logs at VERBOSE is logged at
// Debug.

// logf logs an OpenSSH-format line at the level of fn.
func (s *decider) logf(fn func(msg string, args ...any), format string, args ...any) {
	fn(fmt.Sprintf(format, args...), sshlog.Worded(), "user", s.user)
}

// peer is the connection as sshlog names it.
func (s *decider) peer() sshlog.Peer {
	return sshlog.Peer{Addr: s.addr, Port: s.port, User: s.user, InvalidUser: s.invalidTag() != "", Authenticated: s.done}
}

// invalidTag is OpenSSH's "invalid user " for accounts that may not log
// in (unknown, or refused by the account policy).
func (s *decider) invalidTag() string {
	if s.acct != nil && s.acct.denied != nil {
		return "invalid user "
	}
	return ""
}

// methodName is the method as OpenSSH logs it, with its device.
func (s *decider) methodName(method string) string {
	if method == methodKbdInt && s.cfg.UsePAM {
		return methodKbdInt + "/" + kbdIntDevicePAM
	}
	return method
}

// authLog is OpenSSH's auth_log line: "<what> <method> for [invalid user
// ]<user> from <addr> port <port> ssh2[: <key>]".
func (s *decider) authLog(fn func(msg string, args ...any), what, method string) {
	extra := ""
	if s.info != "" {
		extra = ": " + s.info
	}
	line := fmt.Sprintf("%s %s for %s%.100s from %s port %d ssh2%s", what, s.methodName(method), s.invalidTag(), s.user, s.addr, s.port, extra)
	fn(line, sshlog.Worded(), "event", strings.ToLower(what), "user", s.user, "method", method)
	if s.cfg.OnResult != nil && what != "Postponed" && (what != "Failed" || method != methodNone) {
		s.cfg.OnResult(method, strings.ToLower(what))
	}
}

// authLogFailed logs a failure at OpenSSH's level: INFO for passwords,
// invalid users and once the failures before this one reach half of
// MaxAuthTries (as OpenSSH counts them); VERBOSE otherwise.
func (s *decider) authLogFailed(method string) {
	fn := s.log.Debug
	if method == methodNone { // OpenSSH's monitor never sees "none"
		s.authLog(fn, "Failed", method)
		return
	}
	if method == methodPassword || s.invalidTag() != "" || s.failures >= s.cfg.maxTries/2 {
		fn = s.log.Info
	}
	s.authLog(fn, "Failed", method)
}

// keyTypes are OpenSSH's short key type names (sshkey_type).
var keyTypes = map[string]string{
	ssh.KeyAlgoED25519: "ED25519", ssh.KeyAlgoRSA: "RSA", ssh.KeyAlgoDSA: "DSA",
	ssh.KeyAlgoECDSA256: "ECDSA", ssh.KeyAlgoECDSA384: "ECDSA", ssh.KeyAlgoECDSA521: "ECDSA",
	ssh.KeyAlgoSKED25519: "ED25519-SK", ssh.KeyAlgoSKECDSA256: "ECDSA-SK",
}

func keyType(k ssh.PublicKey) string {
	if c, ok := k.(*ssh.Certificate); ok {
		return keyType(c.Key) + "-CERT"
	}
	if t, ok := keyTypes[k.Type()]; ok {
		return t
	}
	return "unknown"
}

// describeKey is OpenSSH's format_method_key: "ED25519 SHA256:…", or for
// a certificate "ED25519-CERT SHA256:… ID <key id> (serial <n>) CA
// <type> SHA256:…".
func describeKey(k ssh.PublicKey) string {
	c, ok := k.(*ssh.Certificate)
	if !ok {
		return keyType(k) + " " + ssh.FingerprintSHA256(k)
	}
	return fmt.Sprintf("%s %s ID %s (serial %d) CA %s %s", keyType(c), ssh.FingerprintSHA256(c.Key),
		c.KeyId, c.Serial, keyType(c.SignatureKey), ssh.FingerprintSHA256(c.SignatureKey))
}
