package provider_test

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"testing"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
)

// BenchmarkAEAD compares AES-128-GCM sealing through the registry (with and
// without metrics) against crypto/cipher used directly: the registry's
// cost must stay within 2% at 16 KiB and 5% at 1 KiB.
//
//	go test -run='^$' -bench=BenchmarkAEAD -count=10 ./provider | benchstat -col /path -
func BenchmarkAEAD(b *testing.B) {
	key := make([]byte, 16)
	direct := func() cipher.AEAD {
		blk, _ := aes.NewCipher(key)
		a, _ := cipher.NewGCM(blk)
		return a
	}
	viaRegistry := func(m *provider.Metrics) func() cipher.AEAD {
		return func() cipher.AEAD {
			r := provider.New(provider.Config{Metrics: m})
			r.Register(cpu.New(cpu.Detect()))
			r.Register(software.New())
			a, err := r.AEAD("aes128-gcm", key)
			if err != nil {
				b.Fatal(err)
			}
			return a
		}
	}
	for _, size := range []int{1024, 16384} {
		for _, c := range []struct {
			path string
			mk   func() cipher.AEAD
		}{{"direct", direct}, {"registry", viaRegistry(nil)}, {"registry+metrics", viaRegistry(provider.NewMetrics())}} {
			b.Run(fmt.Sprintf("size=%d/path=%s", size, c.path), func(b *testing.B) { sealLoop(b, c.mk(), size) })
		}
	}
}

func sealLoop(b *testing.B, a cipher.AEAD, size int) {
	buf := make([]byte, size, size+a.Overhead())
	nonce := make([]byte, a.NonceSize())
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		a.Seal(buf[:0], nonce, buf[:size], nil)
	}
}

// BenchmarkNewKeys measures the registry's share of a key exchange's
// NEWKEYS: the primitives a server asks for per connection (the exchange
// hashes, and both directions' ciphers), in a registry set up as offload
// sshd sets it up (cpu and software providers, measurements cached,
// metrics on). The primitives' own set-up is a small part of the figure.
//
//	go test -run='^$' -bench=BenchmarkNewKeys -count=5 ./provider
func BenchmarkNewKeys(b *testing.B) {
	cal := provider.NewCalibrator(provider.CalibratorConfig{NoCache: true})
	r := provider.New(provider.Config{Calibrator: cal, Metrics: provider.NewMetrics()})
	c, sw := cpu.New(cpu.Detect()), software.New()
	r.Register(c)
	r.Register(sw)
	for _, name := range []string{"aes128-gcm", "chacha20", "poly1305", "sha256"} {
		alg := provider.MustLookup(name)
		for _, p := range []provider.Provider{c, sw} {
			if provider.Supports(p, name, 0) {
				m := provider.Measurement{MBps1K: 100, MBps32K: 200}
				if p == provider.Provider(c) {
					m = provider.Measurement{MBps1K: 1000, MBps32K: 2000}
				}
				if err := cal.Record(alg, p, m); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	key16, key32 := make([]byte, 16), make([]byte, 32)
	b.Run("aes128-gcm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 3 {
				if _, err := r.Hash("sha256"); err != nil {
					b.Fatal(err)
				}
			}
			for range 2 {
				a, err := r.AEAD("aes128-gcm", key16)
				if err != nil {
					b.Fatal(err)
				}
				provider.Release(a)
			}
		}
	})
	b.Run("chacha20-poly1305", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 3 {
				if _, err := r.Hash("sha256"); err != nil {
					b.Fatal(err)
				}
			}
			for range 2 {
				for range 2 {
					ks, err := r.KeyStream("chacha20", key32)
					if err != nil {
						b.Fatal(err)
					}
					provider.Release(ks)
				}
				if _, err := r.OneTimeMAC("poly1305"); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
