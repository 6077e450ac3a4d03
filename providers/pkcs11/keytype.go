package pkcs11

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"
	"strings"

	"github.com/offload/offload/provider"
)

// KeyType is a kind of signing key `offload keys generate` makes.
type KeyType string

const (
	Ed25519   KeyType = "ed25519"
	ECDSAP256 KeyType = "ecdsa-p256"
	ECDSAP384 KeyType = "ecdsa-p384"
	RSA2048   KeyType = "rsa-2048"
	RSA3072   KeyType = "rsa-3072"
	RSA4096   KeyType = "rsa-4096"
)

// KeyTypes lists every KeyType in a stable order.
var KeyTypes = []KeyType{Ed25519, ECDSAP256, ECDSAP384, RSA2048, RSA3072, RSA4096}

// ParseKeyType parses a key type name.
func ParseKeyType(s string) (KeyType, error) {
	for _, k := range KeyTypes {
		if strings.EqualFold(s, string(k)) {
			return k, nil
		}
	}
	names := make([]string, len(KeyTypes))
	for i, k := range KeyTypes {
		names[i] = string(k)
	}
	return "", fmt.Errorf("pkcs11: unknown key type %q (want one of %s)", s, strings.Join(names, ", "))
}

// RSABits is the modulus size of an RSA key type, 0 for the others.
func (k KeyType) RSABits() int {
	switch k {
	case RSA2048:
		return 2048
	case RSA3072:
		return 3072
	case RSA4096:
		return 4096
	}
	return 0
}

// keyTypeFor is the key type that serves a catalog signature algorithm.
func keyTypeFor(alg *provider.Algorithm) (KeyType, error) {
	switch {
	case alg.Name == "ed25519":
		return Ed25519, nil
	case alg.Name == "ecdsa-p256-sha256":
		return ECDSAP256, nil
	case alg.Name == "ecdsa-p384-sha384":
		return ECDSAP384, nil
	case strings.HasPrefix(alg.Name, "rsa-"):
		return RSA2048, nil
	}
	return "", &provider.UnsupportedError{Provider: DefaultName, Algorithm: alg.Name}
}

// KeyTypeOf describes a public key as a KeyType.
func KeyTypeOf(pub crypto.PublicKey) (KeyType, error) {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return Ed25519, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return ECDSAP256, nil
		case elliptic.P384():
			return ECDSAP384, nil
		}
		return "", fmt.Errorf("pkcs11: unsupported curve %s", k.Curve.Params().Name)
	case *rsa.PublicKey:
		switch k.N.BitLen() {
		case 2048, 3072, 4096:
			return KeyType(fmt.Sprintf("rsa-%d", k.N.BitLen())), nil
		}
		return "", fmt.Errorf("pkcs11: unsupported RSA size %d bits (want 2048, 3072 or 4096)", k.N.BitLen())
	}
	return "", fmt.Errorf("pkcs11: unsupported key type %T", pub)
}

// KeyInfo describes one key pair on a token.
type KeyInfo struct {
	Token  string
	Label  string
	ID     []byte
	Type   KeyType
	URI    string // names exactly this key (without module or PIN)
	Public crypto.PublicKey
	// Sensitive and Extractable are the private key's CKA_SENSITIVE and
	// CKA_EXTRACTABLE: a key offload made is sensitive and not extractable.
	Sensitive, Extractable bool
}
