package provider

import (
	"context"
	"crypto"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"time"
)

// measureRounds splits the budget into short rounds and keeps the best
// round: other work on the machine only ever slows a round down, so the
// maximum is the figure least disturbed by it.
const measureRounds = 4

// measure benchmarks p for alg within budget.
func measure(alg *Algorithm, p Provider, budget time.Duration) (Measurement, error) {
	m := Measurement{Algorithm: alg.Name, Provider: identity(p), At: time.Now().UTC().Truncate(time.Second)}
	round := budget / measureRounds
	if alg.Bulk {
		op, done, err := bulkOp(alg, p)
		if err != nil {
			return m, err
		}
		defer done()
		for i := 0; i < measureRounds; i++ {
			small, err := throughput(op, smallBlock, round/2)
			if err != nil {
				return m, err
			}
			large, err := throughput(op, largeBlock, round/2)
			if err != nil {
				return m, err
			}
			m.MBps1K, m.MBps32K = max(m.MBps1K, small), max(m.MBps32K, large)
		}
		return m, nil
	}
	op, done, err := singleOp(alg, p)
	if err != nil {
		return m, err
	}
	defer done()
	for i := 0; i < measureRounds; i++ {
		r, err := rate(op, round)
		if err != nil {
			return m, err
		}
		m.OpsPerSec = max(m.OpsPerSec, r)
	}
	return m, nil
}

// throughput runs op on size-byte blocks for about d and returns MB/s.
func throughput(op func([]byte) error, size int, d time.Duration) (float64, error) {
	buf := make([]byte, size)
	n, elapsed, err := loop(func() error { return op(buf) }, d)
	if err != nil {
		return 0, err
	}
	return float64(n) * float64(size) / elapsed.Seconds() / 1e6, nil
}

func rate(op func() error, d time.Duration) (float64, error) {
	n, elapsed, err := loop(op, d)
	if err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}

// loop calls op repeatedly for about d (at least once) and counts calls,
// reading the clock every few calls to keep its cost out of the figure.
func loop(op func() error, d time.Duration) (int, time.Duration, error) {
	start := time.Now()
	n, batch := 0, 1
	for {
		for i := 0; i < batch; i++ {
			if err := op(); err != nil {
				return 0, 0, err
			}
		}
		n += batch
		elapsed := time.Since(start)
		if elapsed >= d {
			return n, elapsed, nil
		}
		if elapsed < d/8 && batch < 1<<16 {
			batch *= 2
		}
	}
}

// BulkOp returns a function that processes one buffer in place with alg
// from p: sealing for AEADs, XOR for streams, a MAC or a hash. It is what
// calibration and `offload speed` time. The primitive behind it is
// released when collected.
func BulkOp(alg *Algorithm, p Provider) (func([]byte) error, error) {
	op, _, err := bulkOp(alg, p)
	return op, err
}

func bulkOp(alg *Algorithm, p Provider) (func([]byte) error, func(), error) {
	var held any
	op, err := bulkOpOf(alg, p, &held)
	return op, func() { Release(held) }, err
}

func bulkOpOf(alg *Algorithm, p Provider, held *any) (func([]byte) error, error) {
	key := make([]byte, max(alg.KeySize, 32))[:alg.KeySize]
	rand.Read(key)
	unsupported := &UnsupportedError{Provider: p.Name(), Algorithm: alg.Name}
	switch alg.Family {
	case FamilyAEAD:
		ap, ok := p.(AEADProvider)
		if !ok {
			return nil, unsupported
		}
		return aeadOp(ap, alg, key, held)
	case FamilyStream:
		sp, ok := p.(StreamProvider)
		if !ok {
			return nil, unsupported
		}
		s, err := sp.NewStream(alg, key, make([]byte, alg.NonceSize))
		if err != nil {
			return nil, err
		}
		*held = s
		return func(b []byte) error { s.XORKeyStream(b, b); return nil }, nil
	case FamilyBlock:
		bp, ok := p.(BlockProvider)
		if !ok {
			return nil, unsupported
		}
		b, err := bp.NewBlock(alg, key)
		if err != nil {
			return nil, err
		}
		*held = b
		iv := make([]byte, alg.BlockSize)
		return func(buf []byte) error {
			buf = buf[:len(buf)/alg.BlockSize*alg.BlockSize]
			cipher.NewCBCEncrypter(b, iv).CryptBlocks(buf, buf)
			return nil
		}, nil
	case FamilyKeyStream:
		kp, ok := p.(KeyStreamProvider)
		if !ok {
			return nil, unsupported
		}
		ks, err := kp.NewKeyStream(alg, key)
		if err != nil {
			return nil, err
		}
		*held = ks
		nonce := make([]byte, alg.NonceSize)
		return func(b []byte) error { ks.XORKeyStreamAt(b, b, nonce, 1); return nil }, nil
	}
	return hashingOp(alg, p, key)
}

func aeadOp(ap AEADProvider, alg *Algorithm, key []byte, held *any) (func([]byte) error, error) {
	a, err := ap.NewAEAD(alg, key)
	if err != nil {
		return nil, err
	}
	*held = a
	nonce := make([]byte, a.NonceSize())
	var out []byte
	return func(b []byte) error {
		nonce[0]++ // distinct nonces; the key is thrown away afterwards
		out = a.Seal(out[:0], nonce, b, nil)
		return nil
	}, nil
}

func hashingOp(alg *Algorithm, p Provider, key []byte) (func([]byte) error, error) {
	unsupported := &UnsupportedError{Provider: p.Name(), Algorithm: alg.Name}
	sum := make([]byte, 0, 64)
	switch alg.Family {
	case FamilyMAC, FamilyHash:
		var h interface {
			Write([]byte) (int, error)
			Sum([]byte) []byte
			Reset()
		}
		var err error
		if mp, ok := p.(MACProvider); ok && alg.Family == FamilyMAC {
			h, err = mp.NewMAC(alg, key)
		} else if hp, ok := p.(HashProvider); ok && alg.Family == FamilyHash {
			h, err = hp.NewHash(alg)
		} else {
			return nil, unsupported
		}
		if err != nil {
			return nil, err
		}
		return func(b []byte) error { h.Reset(); h.Write(b); sum = h.Sum(sum[:0]); return nil }, nil
	case FamilyOneTimeMAC:
		op, ok := p.(OneTimeMACProvider)
		if !ok {
			return nil, unsupported
		}
		m, err := op.NewOneTimeMAC(alg)
		if err != nil {
			return nil, err
		}
		tag := make([]byte, alg.TagSize)
		return func(b []byte) error { m.Sum(tag, b, key); return nil }, nil
	}
	return nil, fmt.Errorf("provider: %s is not a bulk algorithm", alg.Name)
}

// SingleOp returns one operation of a non-bulk algorithm for timing:
// a signature over a fixed digest, a key agreement, an encapsulation. A
// signing key it makes is released when collected.
func SingleOp(alg *Algorithm, p Provider) (func() error, error) {
	op, _, err := singleOp(alg, p)
	return op, err
}

func singleOp(alg *Algorithm, p Provider) (func() error, func(), error) {
	var held any
	op, err := singleOpOf(alg, p, &held)
	return op, func() { Release(held) }, err
}

func singleOpOf(alg *Algorithm, p Provider, held *any) (func() error, error) {
	unsupported := &UnsupportedError{Provider: p.Name(), Algorithm: alg.Name}
	switch alg.Family {
	case FamilySignature:
		kg, ok := p.(KeyGenerator)
		if !ok {
			return nil, unsupported
		}
		s, err := kg.GenerateSigner(context.Background(), alg, "")
		if err != nil {
			return nil, err
		}
		*held = s
		msg, opts := SignInput(alg, []byte("offload calibration"))
		return func() error { _, err := s.Sign(rand.Reader, msg, opts); return err }, nil
	case FamilyKeyAgreement:
		kp, ok := p.(KeyAgreementProvider)
		if !ok {
			return nil, unsupported
		}
		return kexOp(kp, alg)
	case FamilyKEM:
		kp, ok := p.(KEMProvider)
		if !ok {
			return nil, unsupported
		}
		d, err := kp.NewDecapsulator(alg)
		if err != nil {
			return nil, err
		}
		ek := d.EncapsulationKey()
		return func() error { _, _, err := kp.Encapsulate(alg, ek); return err }, nil
	}
	return nil, fmt.Errorf("provider: %s has no single operation to time", alg.Name)
}

func kexOp(kp KeyAgreementProvider, alg *Algorithm) (func() error, error) {
	peer, err := kp.NewKeyAgreement(alg)
	if err != nil {
		return nil, err
	}
	pub := peer.PublicKey()
	return func() error {
		ka, err := kp.NewKeyAgreement(alg)
		if err != nil {
			return err
		}
		_, err = ka.SharedSecret(pub)
		return err
	}, nil
}

// SignInput returns what crypto.Signer.Sign takes for alg over msg: the
// digest and hash options, or the message itself for Ed25519.
func SignInput(alg *Algorithm, msg []byte) ([]byte, crypto.SignerOpts) {
	if alg.Hash == 0 {
		return msg, crypto.Hash(0)
	}
	h := alg.Hash.New()
	h.Write(msg)
	digest := h.Sum(nil)
	if alg.PSS {
		return digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: alg.Hash}
	}
	return digest, alg.Hash
}
