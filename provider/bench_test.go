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
