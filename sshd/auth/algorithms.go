package auth

import (
	"crypto/rsa"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// algorithm says, for a public key algorithm name in a publickey request,
// which key type the key blob must have and which format its signature
// must use (RFC 8332 for rsa-sha2-*, PROTOCOL.certkeys for certificates).
type algorithm struct {
	keyType   string
	sigFormat string
}

const certSuffix = "-cert-v01@openssh.com"

// algorithms is every public key algorithm offload knows; Config chooses
// which of them are accepted.
var algorithms = map[string]algorithm{
	"ssh-ed25519":                        {"ssh-ed25519", "ssh-ed25519"},
	"sk-ssh-ed25519@openssh.com":         {"sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519@openssh.com"},
	"ecdsa-sha2-nistp256":                {"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256"},
	"ecdsa-sha2-nistp384":                {"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384"},
	"ecdsa-sha2-nistp521":                {"ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521"},
	"sk-ecdsa-sha2-nistp256@openssh.com": {"sk-ecdsa-sha2-nistp256@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"},
	"rsa-sha2-256":                       {"ssh-rsa", "rsa-sha2-256"},
	"rsa-sha2-512":                       {"ssh-rsa", "rsa-sha2-512"},
	"ssh-rsa":                            {"ssh-rsa", "ssh-rsa"},

	"ssh-ed25519" + certSuffix:                    {"ssh-ed25519" + certSuffix, "ssh-ed25519"},
	"sk-ssh-ed25519-cert-v01@openssh.com":         {"sk-ssh-ed25519-cert-v01@openssh.com", "sk-ssh-ed25519@openssh.com"},
	"ecdsa-sha2-nistp256" + certSuffix:            {"ecdsa-sha2-nistp256" + certSuffix, "ecdsa-sha2-nistp256"},
	"ecdsa-sha2-nistp384" + certSuffix:            {"ecdsa-sha2-nistp384" + certSuffix, "ecdsa-sha2-nistp384"},
	"ecdsa-sha2-nistp521" + certSuffix:            {"ecdsa-sha2-nistp521" + certSuffix, "ecdsa-sha2-nistp521"},
	"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com": {"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"},
	"rsa-sha2-256" + certSuffix:                   {"ssh-rsa" + certSuffix, "rsa-sha2-256"},
	"rsa-sha2-512" + certSuffix:                   {"ssh-rsa" + certSuffix, "rsa-sha2-512"},
	"ssh-rsa" + certSuffix:                        {"ssh-rsa" + certSuffix, "ssh-rsa"},
}

// parseKey parses a publickey request's key blob and checks it against
// the algorithm name the client gave.
func (s *settings) parseKey(algo string, blob []byte) (ssh.PublicKey, *algorithm, error) {
	a, ok := algorithms[algo]
	if !ok || !s.keyAlgoAllowed(algo) {
		return nil, nil, reject("public key algorithm " + quote(algo) + " not accepted")
	}
	key, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return nil, nil, rejectf(err, "unparsable %s key", quote(algo))
	}
	if key.Type() != a.keyType {
		return nil, nil, reject(fmt.Sprintf("key type %s does not match algorithm %s", quote(key.Type()), quote(algo)))
	}
	if err := checkKeySize(key, s.minRSA); err != nil {
		return nil, nil, err
	}
	return key, &a, nil
}

// checkKeySize refuses RSA keys shorter than minBits.
func checkKeySize(key ssh.PublicKey, minBits int) error {
	if c, ok := key.(*ssh.Certificate); ok {
		key = c.Key
	}
	ck, ok := key.(ssh.CryptoPublicKey)
	if !ok {
		return nil
	}
	if rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey); ok && rk.N.BitLen() < minBits {
		return reject(fmt.Sprintf("RSA key of %d bits, at least %d required", rk.N.BitLen(), minBits))
	}
	return nil
}

// quote quotes untrusted text for logs.
func quote(s string) string { return fmt.Sprintf("%q", s) }
