package transport

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"io"
	"slices"

	"golang.org/x/crypto/ssh"
)

// HostKeySigner makes the host-key signatures of one connection. Every
// kind of signature the transport sends is its own method, so that a
// signer in another process (the privilege-separation monitor) is never
// asked to sign bytes it cannot recognise: SignExchange signs only an
// exchange hash, whose size the hash of the key exchange fixes.
//
// The in-process signer made from Config.HostKeys is used when a
// connection is given none; a pre-auth or post-auth process supplies one
// that asks the monitor, which applies its own limits.
type HostKeySigner interface {
	// SignExchange signs the exchange hash H with the host key whose
	// public key (SSH wire format) is pub, using the signature algorithm
	// alg, and returns the SSH signature blob.
	SignExchange(alg string, pub, H []byte) ([]byte, error)
}

// ErrUnknownHostKey is returned by a HostKeySigner asked for a key it
// does not hold.
var ErrUnknownHostKey = errors.New("transport: no such host key")

// hostKey is a host key able to make one host-key signature algorithm.
type hostKey struct {
	alg string
	pub []byte // K_S: the public key in SSH wire format, or its certificate
	// signAlg and signPub are what signs: the plain algorithm and key
	// (for a certificate, the certified key); alg and pub otherwise.
	signAlg string
	signPub []byte
}

// localSigner signs with host keys held in this process.
type localSigner struct {
	rand io.Reader
	keys map[string]ssh.AlgorithmSigner // by wire-format public key
	prov map[string]string              // where each key lives
}

// NewHostKeySigner returns the in-process HostKeySigner of signers (file
// keys, token keys): x/crypto/ssh turns each crypto.Signer into SSH wire
// signatures. A nil rand means crypto/rand.
func NewHostKeySigner(signers []crypto.Signer, rand io.Reader) (HostKeySigner, []ssh.PublicKey, error) {
	ls := &localSigner{rand: rand, keys: map[string]ssh.AlgorithmSigner{}, prov: map[string]string{}}
	var pubs []ssh.PublicKey
	for i, s := range signers {
		w, err := wireSigner(s)
		if err != nil {
			return nil, nil, fmt.Errorf("transport: host key %d: %w", i, err)
		}
		as, ok := w.(ssh.AlgorithmSigner)
		if !ok {
			return nil, nil, fmt.Errorf("transport: host key %d (%s) cannot choose its signature algorithm", i, w.PublicKey().Type())
		}
		ls.keys[string(as.PublicKey().Marshal())] = as
		ls.prov[string(as.PublicKey().Marshal())] = provenanceOf(s)
		pubs = append(pubs, as.PublicKey())
	}
	return ls, pubs, nil
}

// HostKeyProvenance names the provider of the host key pub.
func (ls *localSigner) HostKeyProvenance(pub []byte) string {
	if p, ok := ls.prov[string(pub)]; ok {
		return p
	}
	return "unknown"
}

func (ls *localSigner) SignExchange(alg string, pub, H []byte) ([]byte, error) {
	s, ok := ls.keys[string(pub)]
	if !ok {
		return nil, ErrUnknownHostKey
	}
	sig, err := s.SignWithAlgorithm(ls.rand, H, alg)
	if err != nil {
		return nil, fmt.Errorf("transport: host key signature %s: %w", alg, err)
	}
	return ssh.Marshal(sig), nil
}

// HostKeyAlgorithmFits reports whether the host-key signature algorithm
// alg can be made by a key of pub's type.
func HostKeyAlgorithmFits(alg string, pub ssh.PublicKey) bool {
	spec := findHostKey(alg)
	return spec != nil && spec.keyType == pub.Type()
}

// newHostKeys pairs each allowed algorithm, in order, with the first
// public key (or, for a -cert-v01 algorithm, the first certificate of
// one of the keys) that can make it.
func newHostKeys(pubs []ssh.PublicKey, certs []*ssh.Certificate, allowed []string) ([]hostKey, error) {
	var out []hostKey
	for _, alg := range allowed {
		spec := findHostKey(alg)
		if spec == nil {
			return nil, fmt.Errorf("transport: unknown host key algorithm %q", alg)
		}
		if hk, ok := pairHostKey(spec, pubs, certs); ok {
			out = append(out, hk)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("transport: no host key can make any of the algorithms %v", allowed)
	}
	return out, nil
}

func pairHostKey(spec *hostKeySpec, pubs []ssh.PublicKey, certs []*ssh.Certificate) (hostKey, bool) {
	if spec.certOf == "" {
		for _, p := range pubs {
			if HostKeyAlgorithmFits(spec.name, p) {
				return hostKey{alg: spec.name, pub: p.Marshal(), signAlg: spec.name, signPub: p.Marshal()}, true
			}
		}
		return hostKey{}, false
	}
	for _, c := range certs {
		if c.Type() == spec.keyType {
			return hostKey{alg: spec.name, pub: c.Marshal(), signAlg: spec.certOf, signPub: c.Key.Marshal()}, true
		}
	}
	return hostKey{}, false
}

// checkHostCertificates refuses a certificate that is not a host
// certificate or whose key is none of pubs: its private key must be one
// the connection's HostKeySigner holds (a file or a token key).
func checkHostCertificates(certs []*ssh.Certificate, pubs []ssh.PublicKey) error {
	for i, c := range certs {
		if c.CertType != ssh.HostCert {
			return fmt.Errorf("transport: host certificate %d is a user certificate", i)
		}
		key := c.Key.Marshal()
		if !slices.ContainsFunc(pubs, func(p ssh.PublicKey) bool { return bytes.Equal(p.Marshal(), key) }) {
			return fmt.Errorf("transport: host certificate %d (%s, key %s) certifies no configured host key",
				i, c.KeyId, ssh.FingerprintSHA256(c.Key))
		}
	}
	return nil
}

func hostKeyFor(keys []hostKey, alg string) *hostKey {
	for i := range keys {
		if keys[i].alg == alg {
			return &keys[i]
		}
	}
	return nil
}
