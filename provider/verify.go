package provider

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
)

// ErrVerify is wrapped by signature verification failures.
var ErrVerify = errors.New("provider: signature does not verify")

// Verify checks sig over input (a digest from SignInput, or the message
// for Ed25519) with the standard library's verifiers.
func Verify(pub crypto.PublicKey, alg *Algorithm, input, sig []byte, opts crypto.SignerOpts) error {
	ok := false
	switch k := pub.(type) {
	case ed25519.PublicKey:
		ok = ed25519.Verify(k, input, sig)
	case *ecdsa.PublicKey:
		ok = ecdsa.VerifyASN1(k, input, sig)
	case *rsa.PublicKey:
		var err error
		if pss, isPSS := opts.(*rsa.PSSOptions); isPSS {
			err = rsa.VerifyPSS(k, pss.Hash, input, sig, pss)
		} else {
			err = rsa.VerifyPKCS1v15(k, opts.HashFunc(), input, sig)
		}
		ok = err == nil
	default:
		return fmt.Errorf("provider: %s: cannot verify with a %T", alg.Name, pub)
	}
	if !ok {
		return fmt.Errorf("%w (%s)", ErrVerify, alg.Name)
	}
	return nil
}

// SignatureAlgorithm returns the catalog signature algorithm that a key
// with public half pub signs with under opts (as crypto.Signer.Sign takes
// them), or nil when the catalog has none. With nil opts it is the first
// catalog algorithm for the key (ECDSA P-256: ecdsa-p256-sha256).
func SignatureAlgorithm(pub crypto.PublicKey, opts crypto.SignerOpts) *Algorithm {
	h, pss, anyHash := crypto.Hash(0), false, opts == nil
	if opts != nil {
		h = opts.HashFunc()
		_, pss = opts.(*rsa.PSSOptions)
	}
	size := -1 // the catalog's PublicKeySize of the key
	switch k := pub.(type) {
	case ed25519.PublicKey:
		size = len(k)
	case *ecdsa.PublicKey:
		size = 1 + 2*((k.Curve.Params().BitSize+7)/8)
	case *rsa.PublicKey:
		size = 0
	}
	for _, a := range catalog {
		if a.Family == FamilySignature && a.PublicKeySize == size && (anyHash || a.Hash == h) && a.PSS == pss {
			return a
		}
	}
	return nil
}
