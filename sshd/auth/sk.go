package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// Security-key (FIDO) signatures, PROTOCOL.u2f: the authenticator signs
// SHA-256(application) ‖ flags ‖ counter ‖ SHA-256(data), and the flags
// say whether the user was present (touch) and verified (PIN). offload
// verifies the signature itself so that the flags become policy:
// no-touch-required (authorized_keys option or certificate extension)
// waives presence, verify-required demands verification.

// Flags of a security-key signature.
const (
	flagUserPresent  = 0x01
	flagUserVerified = 0x04
)

const (
	skEd25519 = "sk-ssh-ed25519@openssh.com"
	skECDSA   = "sk-ecdsa-sha2-nistp256@openssh.com"
)

var errSKSignature = errors.New("security-key signature does not verify")

// skFlags is the flags byte of a security-key signature.
type skFlags byte

// plainKey returns the key inside a certificate, or key itself.
func plainKey(key ssh.PublicKey) ssh.PublicKey {
	if c, ok := key.(*ssh.Certificate); ok {
		return c.Key
	}
	return key
}

// isSKKey reports whether key (or a certificate's key) is a security key.
func isSKKey(key ssh.PublicKey) bool {
	t := plainKey(key).Type()
	return t == skEd25519 || t == skECDSA
}

// verifySK checks a security-key signature over data, whatever its
// flags, and returns the flags.
func verifySK(key ssh.PublicKey, data []byte, sig *signature) (skFlags, error) {
	key = plainKey(key)
	app, err := skApplication(key)
	if err != nil {
		return 0, err
	}
	r := wire.NewReader(sig.Rest)
	flags, counter := r.Byte("flags"), r.Uint32("counter")
	if err := r.Done(); err != nil {
		return 0, err
	}
	appHash, dataHash := sha256.Sum256([]byte(app)), sha256.Sum256(data)
	msg := append(appHash[:], flags)
	msg = append(wire.AppendUint32(msg, counter), dataHash[:]...)
	if !skVerify(key, msg, sig.Blob) {
		return 0, errSKSignature
	}
	return skFlags(flags), nil
}

// skApplication reads the application string from the key's wire form.
func skApplication(key ssh.PublicKey) (string, error) {
	r := wire.NewReader(key.Marshal())
	if r.String("key type") == skECDSA {
		r.String("curve")
	}
	r.Bytes("public key")
	app := r.String("application")
	return app, r.Done()
}

func skVerify(key ssh.PublicKey, msg, blob []byte) bool {
	ck, ok := key.(ssh.CryptoPublicKey)
	if !ok {
		return false
	}
	switch pub := ck.CryptoPublicKey().(type) {
	case ed25519.PublicKey:
		return len(pub) == ed25519.PublicKeySize && len(blob) == ed25519.SignatureSize && ed25519.Verify(pub, msg, blob)
	case *ecdsa.PublicKey:
		return skVerifyECDSA(pub, msg, blob)
	}
	return false
}

func skVerifyECDSA(pub *ecdsa.PublicKey, msg, blob []byte) bool {
	r := wire.NewReader(blob)
	rr, ss := r.MPInt("r"), r.MPInt("s")
	if r.Done() != nil || rr.Sign() <= 0 || ss.Sign() <= 0 {
		return false
	}
	digest := sha256.Sum256(msg)
	return ecdsa.Verify(pub, digest[:], rr, ss)
}

// certNoTouch reports whether a certificate waives user presence.
func certNoTouch(key ssh.PublicKey) bool {
	c, ok := key.(*ssh.Certificate)
	if !ok {
		return false
	}
	_, waived := c.Extensions["no-touch-required"]
	return waived
}
