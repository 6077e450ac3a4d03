package provider

import (
	"crypto"
	"fmt"
	"sort"
)

// Family groups algorithms by the shape of their API.
type Family int

const (
	FamilyAEAD         Family = iota + 1 // cipher.AEAD from a key
	FamilyStream                         // cipher.Stream from a key and IV (AES-CTR)
	FamilyKeyStream                      // KeyStream with explicit nonce and counter (ChaCha20)
	FamilyMAC                            // keyed hash.Hash (HMAC)
	FamilyOneTimeMAC                     // one-time authenticator (Poly1305)
	FamilySignature                      // crypto.Signer for a key reference
	FamilyKeyAgreement                   // ephemeral Diffie-Hellman
	FamilyKEM                            // key encapsulation
	FamilyHash                           // hash.Hash
	FamilyBlock                          // cipher.Block from a key (AES, 3DES), for CBC modes
)

var familyNames = map[Family]string{
	FamilyAEAD:         "aead",
	FamilyStream:       "stream",
	FamilyKeyStream:    "keystream",
	FamilyMAC:          "mac",
	FamilyOneTimeMAC:   "onetime-mac",
	FamilySignature:    "signature",
	FamilyKeyAgreement: "key-agreement",
	FamilyKEM:          "kem",
	FamilyHash:         "hash",
	FamilyBlock:        "block",
}

func (f Family) String() string {
	if s, ok := familyNames[f]; ok {
		return s
	}
	return fmt.Sprintf("family(%d)", int(f))
}

// Algorithm describes one catalog entry. Sizes are in bytes and live here
// only: every other package looks them up instead of repeating them.
type Algorithm struct {
	Name   string
	Family Family

	KeySize int // symmetric key size; 0 where not applicable
	// NonceSize is the AEAD nonce, stream IV or keystream nonce; for a
	// MAC that takes a nonce (UMAC) it is the nonce's size, and the nonce
	// is the first NonceSize bytes written to the hash.Hash.
	NonceSize int
	TagSize   int // AEAD tag or MAC output
	BlockSize int // cipher or hash block size

	Hash crypto.Hash // digest used by a signature or MAC; the hash itself for FamilyHash

	PublicKeySize  int // key agreement / KEM public (encapsulation) key
	SharedSize     int // key agreement / KEM shared secret
	CiphertextSize int // KEM ciphertext

	PSS bool // RSA-PSS rather than PKCS #1 v1.5

	// Bulk marks algorithms that carry traffic; calibration measures them
	// by throughput rather than operations per second.
	Bulk bool

	index int // position in the catalog, for per-algorithm tables
}

// catalog is the single table of algorithms offload knows.
var catalog = []*Algorithm{
	{Name: "aes128-gcm", Family: FamilyAEAD, KeySize: 16, NonceSize: 12, TagSize: 16, BlockSize: 16, Bulk: true},
	{Name: "aes256-gcm", Family: FamilyAEAD, KeySize: 32, NonceSize: 12, TagSize: 16, BlockSize: 16, Bulk: true},
	{Name: "chacha20-poly1305", Family: FamilyAEAD, KeySize: 32, NonceSize: 12, TagSize: 16, BlockSize: 64, Bulk: true},

	{Name: "aes128-ctr", Family: FamilyStream, KeySize: 16, NonceSize: 16, BlockSize: 16, Bulk: true},
	{Name: "aes256-ctr", Family: FamilyStream, KeySize: 32, NonceSize: 16, BlockSize: 16, Bulk: true},
	{Name: "aes192-ctr", Family: FamilyStream, KeySize: 24, NonceSize: 16, BlockSize: 16, Bulk: true},
	{Name: "chacha20", Family: FamilyKeyStream, KeySize: 32, NonceSize: 12, BlockSize: 64, Bulk: true},

	{Name: "poly1305", Family: FamilyOneTimeMAC, KeySize: 32, TagSize: 16, BlockSize: 16, Bulk: true},
	{Name: "hmac-sha256", Family: FamilyMAC, KeySize: 32, TagSize: 32, BlockSize: 64, Hash: crypto.SHA256, Bulk: true},
	{Name: "hmac-sha512", Family: FamilyMAC, KeySize: 64, TagSize: 64, BlockSize: 128, Hash: crypto.SHA512, Bulk: true},

	// Legacy algorithms for old SSH peers (off by default in the server):
	// block ciphers for CBC, HMAC over SHA-1 and MD5, and UMAC (RFC 4418,
	// its 8-byte nonce written first).
	{Name: "aes128", Family: FamilyBlock, KeySize: 16, BlockSize: 16, Bulk: true},
	{Name: "aes192", Family: FamilyBlock, KeySize: 24, BlockSize: 16, Bulk: true},
	{Name: "aes256", Family: FamilyBlock, KeySize: 32, BlockSize: 16, Bulk: true},
	{Name: "3des", Family: FamilyBlock, KeySize: 24, BlockSize: 8, Bulk: true},
	{Name: "hmac-sha1", Family: FamilyMAC, KeySize: 20, TagSize: 20, BlockSize: 64, Hash: crypto.SHA1, Bulk: true},
	{Name: "hmac-md5", Family: FamilyMAC, KeySize: 16, TagSize: 16, BlockSize: 64, Hash: crypto.MD5, Bulk: true},
	{Name: "umac-64", Family: FamilyMAC, KeySize: 16, NonceSize: 8, TagSize: 8, BlockSize: 1024, Bulk: true},
	{Name: "umac-128", Family: FamilyMAC, KeySize: 16, NonceSize: 8, TagSize: 16, BlockSize: 1024, Bulk: true},

	{Name: "ed25519", Family: FamilySignature, PublicKeySize: 32},
	{Name: "ecdsa-p256-sha256", Family: FamilySignature, Hash: crypto.SHA256, PublicKeySize: 65},
	{Name: "ecdsa-p384-sha384", Family: FamilySignature, Hash: crypto.SHA384, PublicKeySize: 97},
	{Name: "ecdsa-p521-sha512", Family: FamilySignature, Hash: crypto.SHA512, PublicKeySize: 133},
	{Name: "rsa-pkcs1v15-sha256", Family: FamilySignature, Hash: crypto.SHA256},
	{Name: "rsa-pkcs1v15-sha512", Family: FamilySignature, Hash: crypto.SHA512},
	{Name: "rsa-pss-sha256", Family: FamilySignature, Hash: crypto.SHA256, PSS: true},
	{Name: "rsa-pss-sha512", Family: FamilySignature, Hash: crypto.SHA512, PSS: true},
	// Legacy: SSH's ssh-rsa. Last of the RSA rows, so that an RSA key's
	// first catalog algorithm (SignatureAlgorithm with nil opts) stays SHA-256.
	{Name: "rsa-pkcs1v15-sha1", Family: FamilySignature, Hash: crypto.SHA1},

	{Name: "x25519", Family: FamilyKeyAgreement, PublicKeySize: 32, SharedSize: 32},
	{Name: "ecdh-p256", Family: FamilyKeyAgreement, PublicKeySize: 65, SharedSize: 32},
	{Name: "ecdh-p384", Family: FamilyKeyAgreement, PublicKeySize: 97, SharedSize: 48},
	{Name: "ecdh-p521", Family: FamilyKeyAgreement, PublicKeySize: 133, SharedSize: 66},
	// Finite-field Diffie-Hellman in the MODP groups of RFC 3526 (SSH's
	// group14, group16 and group18), and in a group named per exchange.
	{Name: "modp1024", Family: FamilyKeyAgreement, PublicKeySize: 128, SharedSize: 128}, // legacy: SSH's group 1
	{Name: "modp2048", Family: FamilyKeyAgreement, PublicKeySize: 256, SharedSize: 256},
	{Name: "modp4096", Family: FamilyKeyAgreement, PublicKeySize: 512, SharedSize: 512},
	{Name: "modp8192", Family: FamilyKeyAgreement, PublicKeySize: 1024, SharedSize: 1024},
	{Name: "modp-gex", Family: FamilyKeyAgreement, PublicKeySize: 256, SharedSize: 256}, // sizes of its default group

	{Name: "ml-kem-768", Family: FamilyKEM, PublicKeySize: 1184, SharedSize: 32, CiphertextSize: 1088},
	{Name: "sntrup761", Family: FamilyKEM, PublicKeySize: 1158, SharedSize: 32, CiphertextSize: 1039},

	{Name: "sha1", Family: FamilyHash, TagSize: 20, BlockSize: 64, Hash: crypto.SHA1, Bulk: true}, // legacy key exchanges
	{Name: "sha256", Family: FamilyHash, TagSize: 32, BlockSize: 64, Hash: crypto.SHA256, Bulk: true},
	{Name: "sha384", Family: FamilyHash, TagSize: 48, BlockSize: 128, Hash: crypto.SHA384, Bulk: true},
	{Name: "sha512", Family: FamilyHash, TagSize: 64, BlockSize: 128, Hash: crypto.SHA512, Bulk: true},
}

var catalogByName = func() map[string]*Algorithm {
	m := make(map[string]*Algorithm, len(catalog))
	for i, a := range catalog {
		if _, dup := m[a.Name]; dup {
			panic("provider: duplicate catalog entry " + a.Name)
		}
		a.index = i
		m[a.Name] = a
	}
	return m
}()

// Lookup returns the catalog entry for name.
func Lookup(name string) (*Algorithm, error) {
	if a, ok := catalogByName[name]; ok {
		return a, nil
	}
	return nil, &UnknownAlgorithmError{Name: name}
}

// MustLookup is Lookup for names fixed in source code; it panics on a
// name missing from the catalog, which is a programming error.
func MustLookup(name string) *Algorithm {
	a, err := Lookup(name)
	if err != nil {
		panic(err)
	}
	return a
}

// Algorithms returns every catalog entry in table order. The slice is a copy.
func Algorithms() []*Algorithm {
	return append([]*Algorithm(nil), catalog...)
}

// Names returns the sorted names of every catalog entry.
func Names() []string {
	out := make([]string, 0, len(catalog))
	for _, a := range catalog {
		out = append(out, a.Name)
	}
	sort.Strings(out)
	return out
}

// checkKey reports a key of the wrong length for alg.
func checkKey(alg *Algorithm, key []byte) error {
	if alg.KeySize != 0 && len(key) != alg.KeySize {
		return &KeySizeError{Algorithm: alg.Name, Got: len(key), Want: alg.KeySize}
	}
	return nil
}

// CheckKey returns a *KeySizeError when key does not fit alg.
func CheckKey(alg *Algorithm, key []byte) error { return checkKey(alg, key) }
