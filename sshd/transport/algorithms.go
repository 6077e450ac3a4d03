package transport

// cipherSpec is one row of the SSH cipher table: the SSH name, the
// registry algorithms it is assembled from and its sizes on the wire.
type cipherSpec struct {
	name string
	// aead names a registry AEAD (aes-gcm); stream a registry stream
	// (aes-ctr) used with a separately negotiated MAC; keyStream and
	// oneTimeMAC the chacha20-poly1305 construction.
	aead, stream, keyStream, oneTimeMAC string
	// block names a registry block cipher run in CBC mode (cipher_cbc.go).
	block           string
	keySize, ivSize int
	// blockSize is the padding alignment.
	blockSize int
	// macBuiltIn is true for ciphers that authenticate themselves; the
	// negotiated MAC is then ignored.
	macBuiltIn bool
	// rekeyBlock is the block size used for the RFC 4344 rekey limit.
	rekeyBlock  int
	onByDefault bool
	warn        string // what scanners warn about; such rows are out of ProfileHardened
}

// macSpec is one row of the SSH MAC table.
type macSpec struct {
	name        string
	hmac        string // registry MAC algorithm
	keySize     int
	tagSize     int
	etm         bool // encrypt-then-MAC: the MAC covers the ciphertext and the clear length
	onByDefault bool
	warn        string
}

// kexSpec is one row of the key exchange table.
type kexSpec struct {
	name        string
	hash        string // registry hash for the exchange hash and key derivation
	agree       string // registry key agreement
	kem         string // registry KEM of a hybrid exchange, or ""
	method      *kexMethod
	onByDefault bool
	warn        string
}

// hostKeySpec maps a host-key signature algorithm to the public key type
// that can make it.
type hostKeySpec struct {
	name      string // signature algorithm negotiated in KEXINIT
	keyType   string // ssh public key type of a signer that can make it
	signature string // registry signature algorithm behind it
	// certOf is, for a -cert-v01 algorithm, the plain signature algorithm
	// the certified key signs with; K_S is then the certificate.
	certOf      string
	onByDefault bool
	warn        string
}

// The algorithm tables. Order within a table is the default preference
// (for ciphers it steers nothing: the client's order decides; see
// CipherSelection in selection.go).
var (
	cipherTable = []cipherSpec{
		{name: "chacha20-poly1305@openssh.com", keyStream: "chacha20", oneTimeMAC: "poly1305", keySize: 64, blockSize: 8, macBuiltIn: true, rekeyBlock: 8, onByDefault: true},
		{name: "aes128-gcm@openssh.com", aead: "aes128-gcm", keySize: 16, ivSize: 12, blockSize: 16, macBuiltIn: true, rekeyBlock: 16, onByDefault: true},
		{name: "aes256-gcm@openssh.com", aead: "aes256-gcm", keySize: 32, ivSize: 12, blockSize: 16, macBuiltIn: true, rekeyBlock: 16, onByDefault: true},
		{name: "aes128-ctr", stream: "aes128-ctr", keySize: 16, ivSize: 16, blockSize: 16, rekeyBlock: 16, onByDefault: true},
		{name: "aes256-ctr", stream: "aes256-ctr", keySize: 32, ivSize: 16, blockSize: 16, rekeyBlock: 16, onByDefault: true},
		// On by default in OpenSSH 9.2 and 10 too; no scanner flags it.
		{name: "aes192-ctr", stream: "aes192-ctr", keySize: 24, ivSize: 16, blockSize: 16, rekeyBlock: 16, onByDefault: true},
		// CBC, off by default as in OpenSSH: for old peers that have
		// nothing else ("Ciphers +aes128-cbc").
		{name: "aes128-cbc", block: "aes128", keySize: 16, ivSize: 16, blockSize: 16, rekeyBlock: 16, warn: warnCBC},
		{name: "aes192-cbc", block: "aes192", keySize: 24, ivSize: 16, blockSize: 16, rekeyBlock: 16, warn: warnCBC},
		{name: "aes256-cbc", block: "aes256", keySize: 32, ivSize: 16, blockSize: 16, rekeyBlock: 16, warn: warnCBC},
		{name: "3des-cbc", block: "3des", keySize: 24, ivSize: 8, blockSize: 8, rekeyBlock: 8, warn: warnCBC + "; 64-bit blocks"},
	}
	macTable = []macSpec{
		{name: "hmac-sha2-256-etm@openssh.com", hmac: "hmac-sha256", keySize: 32, tagSize: 32, etm: true, onByDefault: true},
		{name: "hmac-sha2-512-etm@openssh.com", hmac: "hmac-sha512", keySize: 64, tagSize: 64, etm: true, onByDefault: true},
		// libssh2 (curl, PHP, many embedded clients) has only these with
		// its CTR ciphers; OpenSSH offers them by default too.
		{name: "hmac-sha2-256", hmac: "hmac-sha256", keySize: 32, tagSize: 32, onByDefault: true, warn: warnEaM},
		{name: "hmac-sha2-512", hmac: "hmac-sha512", keySize: 64, tagSize: 64, onByDefault: true, warn: warnEaM},
		// UMAC (RFC 4418), on by default as in OpenSSH 9.2 and 10; ssh-audit
		// warns about the 64-bit tags and the encrypt-and-MAC forms, as it
		// does on OpenSSH's defaults.
		{name: "umac-64-etm@openssh.com", hmac: "umac-64", keySize: 16, tagSize: 8, etm: true, onByDefault: true, warn: warnTag64},
		{name: "umac-128-etm@openssh.com", hmac: "umac-128", keySize: 16, tagSize: 16, etm: true, onByDefault: true},
		{name: "umac-64@openssh.com", hmac: "umac-64", keySize: 16, tagSize: 8, onByDefault: true, warn: warnEaM + "; " + warnTag64},
		{name: "umac-128@openssh.com", hmac: "umac-128", keySize: 16, tagSize: 16, onByDefault: true, warn: warnEaM},
		// SHA-1 and MD5 HMACs, off by default. OpenSSH 9.2 and 10 offer
		// hmac-sha1 and hmac-sha1-etm by default; offload does not, since
		// ssh-audit fails SHA-1 MACs (docs/configuration.md).
		{name: "hmac-sha1-etm@openssh.com", hmac: "hmac-sha1", keySize: 20, tagSize: 20, etm: true, warn: warnSHA1},
		{name: "hmac-sha1", hmac: "hmac-sha1", keySize: 20, tagSize: 20, warn: warnSHA1},
		{name: "hmac-sha1-96-etm@openssh.com", hmac: "hmac-sha1", keySize: 20, tagSize: 12, etm: true, warn: warnSHA1},
		{name: "hmac-sha1-96", hmac: "hmac-sha1", keySize: 20, tagSize: 12, warn: warnSHA1},
		{name: "hmac-md5-etm@openssh.com", hmac: "hmac-md5", keySize: 16, tagSize: 16, etm: true, warn: warnMD5},
		{name: "hmac-md5", hmac: "hmac-md5", keySize: 16, tagSize: 16, warn: warnMD5},
		{name: "hmac-md5-96-etm@openssh.com", hmac: "hmac-md5", keySize: 16, tagSize: 12, etm: true, warn: warnMD5},
		{name: "hmac-md5-96", hmac: "hmac-md5", keySize: 16, tagSize: 12, warn: warnMD5},
	}
	kexTable = []kexSpec{
		{name: "mlkem768x25519-sha256", method: ecdhMethod, hash: "sha256", agree: "x25519", kem: "ml-kem-768", onByDefault: true},
		{name: "sntrup761x25519-sha512", method: ecdhMethod, hash: "sha512", agree: "x25519", kem: "sntrup761", onByDefault: true},
		{name: "sntrup761x25519-sha512@openssh.com", method: ecdhMethod, hash: "sha512", agree: "x25519", kem: "sntrup761", onByDefault: true,
			warn: "experimental algorithm (ssh-audit 2.5); the name OpenSSH 8.5 to 9.8 know"},
		{name: "curve25519-sha256", method: ecdhMethod, hash: "sha256", agree: "x25519", onByDefault: true},
		{name: "curve25519-sha256@libssh.org", method: ecdhMethod, hash: "sha256", agree: "x25519", onByDefault: true},
		{name: "ecdh-sha2-nistp256", method: ecdhMethod, hash: "sha256", agree: "ecdh-p256", warn: warnNIST},
		{name: "ecdh-sha2-nistp384", method: ecdhMethod, hash: "sha384", agree: "ecdh-p384", warn: warnNIST},
		{name: "mlkem768nistp256-sha256", method: ecdhMethod, hash: "sha256", agree: "ecdh-p256", kem: "ml-kem-768", warn: warnNIST},
		// Finite-field Diffie-Hellman, off by default as in OpenSSH 10's
		// server: for old clients that have nothing else.
		{name: "diffie-hellman-group14-sha256", method: dhMethod, hash: "sha256", agree: "modp2048"},
		{name: "diffie-hellman-group16-sha512", method: dhMethod, hash: "sha512", agree: "modp4096"},
		{name: "diffie-hellman-group18-sha512", method: dhMethod, hash: "sha512", agree: "modp8192"},
		{name: "diffie-hellman-group-exchange-sha256", method: gexMethod, hash: "sha256", agree: "modp-gex"},
		// Legacy, off by default as in OpenSSH 9.2: SHA-1 exchange hashes,
		// a 1024-bit group, and P-521 (off like the other NIST curves).
		{name: "ecdh-sha2-nistp521", method: ecdhMethod, hash: "sha512", agree: "ecdh-p521", warn: warnNIST},
		{name: "diffie-hellman-group14-sha1", method: dhMethod, hash: "sha1", agree: "modp2048", warn: warnSHA1},
		{name: "diffie-hellman-group-exchange-sha1", method: gexMethod, hash: "sha1", agree: "modp-gex", warn: warnSHA1},
		{name: "diffie-hellman-group1-sha1", method: dhMethod, hash: "sha1", agree: "modp1024", warn: warnSHA1 + "; 1024-bit group"},
	}
	hostKeyTable = []hostKeySpec{
		// Certificates first, as OpenSSH orders them: offered only with a
		// Config.HostCertificates entry for the key.
		{name: "ssh-ed25519-cert-v01@openssh.com", keyType: "ssh-ed25519-cert-v01@openssh.com", signature: "ed25519", certOf: "ssh-ed25519", onByDefault: true},
		{name: "ecdsa-sha2-nistp256-cert-v01@openssh.com", keyType: "ecdsa-sha2-nistp256-cert-v01@openssh.com", signature: "ecdsa-p256-sha256", certOf: "ecdsa-sha2-nistp256", onByDefault: true, warn: warnNIST},
		{name: "ecdsa-sha2-nistp384-cert-v01@openssh.com", keyType: "ecdsa-sha2-nistp384-cert-v01@openssh.com", signature: "ecdsa-p384-sha384", certOf: "ecdsa-sha2-nistp384", onByDefault: true, warn: warnNIST},
		{name: "ecdsa-sha2-nistp521-cert-v01@openssh.com", keyType: "ecdsa-sha2-nistp521-cert-v01@openssh.com", signature: "ecdsa-p521-sha512", certOf: "ecdsa-sha2-nistp521", onByDefault: true, warn: warnNIST},
		{name: "rsa-sha2-512-cert-v01@openssh.com", keyType: "ssh-rsa-cert-v01@openssh.com", signature: "rsa-pkcs1v15-sha512", certOf: "rsa-sha2-512", onByDefault: true},
		{name: "rsa-sha2-256-cert-v01@openssh.com", keyType: "ssh-rsa-cert-v01@openssh.com", signature: "rsa-pkcs1v15-sha256", certOf: "rsa-sha2-256", onByDefault: true},
		{name: "ssh-ed25519", keyType: "ssh-ed25519", signature: "ed25519", onByDefault: true},
		{name: "ecdsa-sha2-nistp256", keyType: "ecdsa-sha2-nistp256", signature: "ecdsa-p256-sha256", onByDefault: true, warn: warnNIST},
		{name: "ecdsa-sha2-nistp384", keyType: "ecdsa-sha2-nistp384", signature: "ecdsa-p384-sha384", onByDefault: true, warn: warnNIST},
		{name: "ecdsa-sha2-nistp521", keyType: "ecdsa-sha2-nistp521", signature: "ecdsa-p521-sha512", onByDefault: true, warn: warnNIST},
		{name: "rsa-sha2-512", keyType: "ssh-rsa", signature: "rsa-pkcs1v15-sha512", onByDefault: true},
		{name: "rsa-sha2-256", keyType: "ssh-rsa", signature: "rsa-pkcs1v15-sha256", onByDefault: true},
		// SHA-1 RSA signatures, off by default as in OpenSSH since 8.8:
		// "HostKeyAlgorithms +ssh-rsa" for clients that know no other.
		{name: "ssh-rsa-cert-v01@openssh.com", keyType: "ssh-rsa-cert-v01@openssh.com", signature: "rsa-pkcs1v15-sha1", certOf: "ssh-rsa", warn: warnSHA1},
		{name: "ssh-rsa", keyType: "ssh-rsa", signature: "rsa-pkcs1v15-sha1", warn: warnSHA1},
	}
)

// Scanner findings that keep an algorithm out of ProfileHardened.
const (
	warnEaM   = "encrypt-and-MAC mode (ssh-audit warns)"
	warnNIST  = "NIST elliptic curve (ssh-audit fails it)"
	warnCBC   = "CBC mode (ssh-audit warns; plaintext recovery on encrypt-and-MAC)"
	warnTag64 = "64-bit tag (ssh-audit warns)"
	warnSHA1  = "SHA-1 (ssh-audit fails it)"
	warnMD5   = "MD5 (ssh-audit fails it)"
)

// Pseudo-algorithms announced in the kex list.
const (
	strictKexServer = "kex-strict-s-v00@openssh.com"
	strictKexClient = "kex-strict-c-v00@openssh.com"
	extInfoClient   = "ext-info-c"
	compressionNone = "none"
)

// DefaultServerSigAlgs is announced in EXT_INFO server-sig-algs: the
// public key signature algorithms user authentication accepts.
var DefaultServerSigAlgs = []string{
	"ssh-ed25519", "sk-ssh-ed25519@openssh.com",
	"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
	"sk-ecdsa-sha2-nistp256@openssh.com",
	"rsa-sha2-512", "rsa-sha2-256",
}

func findCipher(name string) *cipherSpec {
	return find(cipherTable, name, func(c *cipherSpec) string { return c.name })
}
func findMAC(name string) *macSpec {
	return find(macTable, name, func(m *macSpec) string { return m.name })
}
func findKex(name string) *kexSpec {
	return find(kexTable, name, func(k *kexSpec) string { return k.name })
}
func findHostKey(name string) *hostKeySpec {
	return find(hostKeyTable, name, func(h *hostKeySpec) string { return h.name })
}

func find[T any](table []T, name string, key func(*T) string) *T {
	for i := range table {
		if key(&table[i]) == name {
			return &table[i]
		}
	}
	return nil
}

func defaults[T any](table []T, on func(*T) bool, key func(*T) string) []string {
	var out []string
	for i := range table {
		if on(&table[i]) {
			out = append(out, key(&table[i]))
		}
	}
	return out
}

// SupportedCiphers, SupportedMACs, SupportedKex and SupportedHostKeyAlgorithms
// list every algorithm the transport implements, in table order.
func SupportedCiphers() []string {
	return defaults(cipherTable, func(*cipherSpec) bool { return true }, func(c *cipherSpec) string { return c.name })
}

// SupportedMACs lists every MAC the transport implements.
func SupportedMACs() []string {
	return defaults(macTable, func(*macSpec) bool { return true }, func(m *macSpec) string { return m.name })
}

// SupportedKex lists every key exchange the transport implements.
func SupportedKex() []string {
	return defaults(kexTable, func(*kexSpec) bool { return true }, func(k *kexSpec) string { return k.name })
}

// SupportedHostKeyAlgorithms lists every host-key signature algorithm.
func SupportedHostKeyAlgorithms() []string {
	return defaults(hostKeyTable, func(*hostKeySpec) bool { return true }, func(h *hostKeySpec) string { return h.name })
}

// DefaultMACs is the default MAC offer.
func DefaultMACs() []string {
	return defaults(macTable, func(m *macSpec) bool { return m.onByDefault }, func(m *macSpec) string { return m.name })
}

// DefaultKex is the default key exchange offer: the NIST curves are off.
func DefaultKex() []string {
	return defaults(kexTable, func(k *kexSpec) bool { return k.onByDefault }, func(k *kexSpec) string { return k.name })
}

// DefaultHostKeyAlgorithms is the default host-key algorithm offer.
func DefaultHostKeyAlgorithms() []string {
	return defaults(hostKeyTable, func(h *hostKeySpec) bool { return h.onByDefault }, func(h *hostKeySpec) string { return h.name })
}

// DefaultCiphers is the default cipher offer, in table order. In SSH the
// client's order decides, so the server's order changes nothing; what
// can steer the choice is CipherSelection "measured" (selection.go).
func DefaultCiphers() []string {
	return defaults(cipherTable, func(c *cipherSpec) bool { return c.onByDefault }, func(c *cipherSpec) string { return c.name })
}
