package transport

import (
	"crypto"
	"errors"
	"fmt"
	"io"

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
	pub []byte // the public key in SSH wire format (K_S)
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
		w, err := ssh.NewSignerFromSigner(s)
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
// public key that can make it.
func newHostKeys(pubs []ssh.PublicKey, allowed []string) ([]hostKey, error) {
	var out []hostKey
	for _, alg := range allowed {
		if findHostKey(alg) == nil {
			return nil, fmt.Errorf("transport: unknown host key algorithm %q", alg)
		}
		for _, p := range pubs {
			if HostKeyAlgorithmFits(alg, p) {
				out = append(out, hostKey{alg: alg, pub: p.Marshal()})
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("transport: no host key can make any of the algorithms %v", allowed)
	}
	return out, nil
}

func hostKeyFor(keys []hostKey, alg string) *hostKey {
	for i := range keys {
		if keys[i].alg == alg {
			return &keys[i]
		}
	}
	return nil
}
