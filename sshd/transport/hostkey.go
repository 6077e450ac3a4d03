package transport

import (
	"crypto"
	"fmt"
	"io"

	"golang.org/x/crypto/ssh"
)

// hostKey is a configured key able to make one host-key signature
// algorithm.
type hostKey struct {
	alg    string
	signer ssh.AlgorithmSigner
	pub    []byte // the public key in SSH wire format (K_S)
}

// newHostKeys pairs each allowed algorithm, in order, with the first
// configured key that can make it. x/crypto/ssh turns the crypto.Signer
// (a file key or a token key) into SSH wire signatures.
func newHostKeys(signers []crypto.Signer, allowed []string) ([]hostKey, error) {
	var wrapped []ssh.AlgorithmSigner
	for i, s := range signers {
		w, err := ssh.NewSignerFromSigner(s)
		if err != nil {
			return nil, fmt.Errorf("transport: host key %d: %w", i, err)
		}
		as, ok := w.(ssh.AlgorithmSigner)
		if !ok {
			return nil, fmt.Errorf("transport: host key %d (%s) cannot choose its signature algorithm", i, w.PublicKey().Type())
		}
		wrapped = append(wrapped, as)
	}
	var out []hostKey
	for _, alg := range allowed {
		spec := findHostKey(alg)
		if spec == nil {
			return nil, fmt.Errorf("transport: unknown host key algorithm %q", alg)
		}
		for _, w := range wrapped {
			if w.PublicKey().Type() == spec.keyType {
				out = append(out, hostKey{alg: alg, signer: w, pub: w.PublicKey().Marshal()})
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

// sign returns the SSH signature blob of h over data.
func (h *hostKey) sign(rand io.Reader, data []byte) ([]byte, error) {
	sig, err := h.signer.SignWithAlgorithm(rand, data, h.alg)
	if err != nil {
		return nil, fmt.Errorf("transport: host key signature %s: %w", h.alg, err)
	}
	return ssh.Marshal(sig), nil
}
