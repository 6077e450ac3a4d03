package software

import (
	"crypto/rand"
	"fmt"

	"github.com/offload/offload/providers/software/internal/sntrup761"
)

// sntrupDecapsulator is the receiving side of sntrup761 (Streamlined NTRU
// Prime 761, package internal/sntrup761).
type sntrupDecapsulator struct{ pk, sk []byte }

func newSntrupDecapsulator() (*sntrupDecapsulator, error) {
	pk, sk, err := sntrup761.GenerateKey(sntrup761.ReaderSource{R: rand.Reader})
	if err != nil {
		return nil, fmt.Errorf("software: sntrup761: %w", err)
	}
	return &sntrupDecapsulator{pk: pk, sk: sk}, nil
}

func (d *sntrupDecapsulator) EncapsulationKey() []byte { return d.pk }

func (d *sntrupDecapsulator) Decapsulate(ct []byte) ([]byte, error) {
	s, err := sntrup761.Decapsulate(d.sk, ct)
	if err != nil {
		return nil, fmt.Errorf("software: sntrup761 decapsulate: %w", err)
	}
	return s, nil
}

func sntrupEncapsulate(pk []byte) (shared, ciphertext []byte, err error) {
	ct, ss, err := sntrup761.Encapsulate(sntrup761.ReaderSource{R: rand.Reader}, pk)
	if err != nil {
		return nil, nil, fmt.Errorf("software: sntrup761: %w", err)
	}
	return ss, ct, nil
}
