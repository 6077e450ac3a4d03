package config

import "strings"

// Every algorithm name OpenSSH 9.2 or 10 knows (and Debian's GSSAPI key
// exchanges), per list. This is OpenSSH's catalogue, not offload's (that
// is sshd/transport's table): a name in it that offload does not implement
// is refused with the reason (refusedAlg), or, where OpenSSH too would
// never offer it without something offload cannot have, left out with a
// warning (inertAlg); names in no list are unknown, as they are to
// OpenSSH ("Bad SSH2 cipher spec").
var (
	opensshCiphers = []string{"3des-cbc", "aes128-cbc", "aes192-cbc", "aes256-cbc", "aes128-ctr", "aes192-ctr",
		"aes256-ctr", "aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com"}
	opensshMACs = []string{"hmac-sha1", "hmac-sha1-96", "hmac-sha2-256", "hmac-sha2-512", "hmac-md5", "hmac-md5-96",
		"umac-64@openssh.com", "umac-128@openssh.com", "hmac-sha1-etm@openssh.com", "hmac-sha1-96-etm@openssh.com",
		"hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com", "hmac-md5-etm@openssh.com",
		"hmac-md5-96-etm@openssh.com", "umac-64-etm@openssh.com", "umac-128-etm@openssh.com"}
	opensshKex = []string{"diffie-hellman-group1-sha1", "diffie-hellman-group14-sha1", "diffie-hellman-group14-sha256",
		"diffie-hellman-group16-sha512", "diffie-hellman-group18-sha512", "diffie-hellman-group-exchange-sha1",
		"diffie-hellman-group-exchange-sha256", "ecdh-sha2-nistp256", "ecdh-sha2-nistp384", "ecdh-sha2-nistp521",
		"curve25519-sha256", "curve25519-sha256@libssh.org", "sntrup761x25519-sha512",
		"sntrup761x25519-sha512@openssh.com", "mlkem768x25519-sha256", "mlkem768nistp256-sha256",
		// Debian's GSSAPI key exchanges.
		"gss-gex-sha1-", "gss-group1-sha1-", "gss-group14-sha1-", "gss-group14-sha256-", "gss-group16-sha512-",
		"gss-nistp256-sha256-", "gss-curve25519-sha256-"}
	opensshKeyTypes = []string{"ssh-ed25519", "ssh-ed25519-cert-v01@openssh.com", "sk-ssh-ed25519@openssh.com",
		"sk-ssh-ed25519-cert-v01@openssh.com", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
		"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp521",
		"ecdsa-sha2-nistp521-cert-v01@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
		"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com", "webauthn-sk-ecdsa-sha2-nistp256@openssh.com",
		"webauthn-sk-ecdsa-sha2-nistp256-cert-v01@openssh.com", "rsa-sha2-512", "rsa-sha2-512-cert-v01@openssh.com",
		"rsa-sha2-256", "rsa-sha2-256-cert-v01@openssh.com", "ssh-rsa", "ssh-rsa-cert-v01@openssh.com",
		"ssh-mldsa44-ed25519@openssh.com", "ssh-mldsa44-ed25519-cert-v01@openssh.com",
		"ssh-dss", "ssh-dss-cert-v01@openssh.com"}
	// opensshDefaultKeyTypes is OpenSSH 10's default key type list
	// (KEX_DEFAULT_PK_ALG), the default of HostbasedAcceptedAlgorithms.
	opensshDefaultKeyTypes = []string{"ssh-ed25519-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
		"ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp521-cert-v01@openssh.com",
		"sk-ssh-ed25519-cert-v01@openssh.com", "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
		"rsa-sha2-512-cert-v01@openssh.com", "rsa-sha2-256-cert-v01@openssh.com", "ssh-ed25519",
		"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com",
		"sk-ecdsa-sha2-nistp256@openssh.com", "rsa-sha2-512", "rsa-sha2-256"}
)

// refusedAlg is why offload refuses an algorithm name OpenSSH knows, or
// "" when the name is inert (inertAlg) or implemented.
func refusedAlg(list AlgList, name string) string {
	switch {
	case strings.HasPrefix(name, "ssh-dss"):
		return "DSA keys and signatures are not supported (OpenSSH 10 removed them; docs/configuration.md)"
	case strings.HasPrefix(name, "ssh-mldsa44"):
		return "ML-DSA keys are not implemented by offload"
	case strings.HasPrefix(name, "webauthn-"):
		return "WebAuthn signatures of security keys are not implemented by offload"
	case inertAlg(list, name) != "":
		return ""
	}
	return "not implemented by offload"
}

// inertAlg is, for a name offload accepts in list without offering it,
// why OpenSSH would not offer it here either; "" for other names.
func inertAlg(list AlgList, name string) string {
	switch {
	case list == KexList && strings.HasPrefix(name, "gss-"):
		return "a GSSAPI key exchange, offered only with GSSAPIKeyExchange, which offload does not implement"
	case list == HostKeyAlgList && strings.HasPrefix(name, "sk-"):
		return "a security-key host key algorithm, offered only for a loaded security-key host key, which offload cannot load"
	}
	return ""
}
