//go:build cgo && !nopkcs11

package pkcs11

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/internal/softhsm"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// cpuTime returns the process's user+system CPU time. Benchmarks report
// it per operation beside wall time: on a shared, loaded machine it is the
// steadier measure of what an operation costs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs op b.N times (b.Loop) and reports CPU ns per op.
func loop(b *testing.B, op func()) {
	start := cpuTime()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// benchProvider opens a provider with a pool of sessions sessions.
func benchProvider(b *testing.B, label string, sessions int) (*Provider, *softhsm.Token) {
	b.Helper()
	tok := softhsm.NewToken(b, softhsm.WithLabel(label))
	p, err := OpenURI(tok.TokenURI(), Config{MaxSessions: sessions, HealthInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p, tok
}

var benchKeys = []struct {
	name string
	kt   KeyType
	opts crypto.SignerOpts
}{
	{"P-256", ECDSAP256, crypto.SHA256},
	{"Ed25519", Ed25519, crypto.Hash(0)},
	{"RSA-2048", RSA2048, crypto.SHA256},
}

// BenchmarkSign compares signing through the provider with a raw
// miekg/pkcs11 C_SignInit + C_Sign loop on the same key and one session.
func BenchmarkSign(b *testing.B) {
	p, tok := benchProvider(b, "bench-sign", 1)
	ctx := context.Background()
	d := sha256.Sum256([]byte("benchmark"))
	for _, k := range benchKeys {
		s, err := p.Generate(ctx, tok.URI("bench-"+string(k.kt)), k.kt)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(k.name+"/provider", func(b *testing.B) {
			loop(b, func() {
				if _, err := s.Sign(rand.Reader, d[:], k.opts); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(k.name+"/raw", func(b *testing.B) {
			sg := s.(*signer)
			data := d[:]
			if k.kt == RSA2048 {
				data = append(append([]byte{}, digestInfoPrefix[crypto.SHA256]...), d[:]...)
			}
			t := sg.tok
			sess, err := t.get(ctx, true)
			if err != nil {
				b.Fatal(err)
			}
			defer t.put(sess)
			obj := sg.cache.Load().h
			a := p.c.mod.ctx // the module itself, no wrapper
			mech := []*pkcs11.Mechanism{pkcs11.NewMechanism(sg.mech[0].Mechanism, nil)}
			loop(b, func() {
				if err := a.SignInit(sess.h, mech, obj); err != nil {
					b.Fatal(err)
				}
				if _, err := a.Sign(sess.h, data); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkSignParallel signs P-256 from GOMAXPROCS goroutines with a pool
// of one and of two sessions, with a key stored on the token and with a
// session key (which SoftHSM keeps in memory only).
func BenchmarkSignParallel(b *testing.B) {
	for _, kind := range []string{"token-key", "session-key"} {
		for _, n := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/sessions=%d", kind, n), func(b *testing.B) {
				p, tok := benchProvider(b, "bench-par", n)
				var s crypto.Signer
				var err error
				if kind == "token-key" {
					s, err = p.Generate(context.Background(), tok.URI("k"), ECDSAP256)
				} else {
					s, err = p.GenerateSigner(context.Background(), provider.MustLookup("ecdsa-p256-sha256"), "")
				}
				if err != nil {
					b.Fatal(err)
				}
				d := sha256.Sum256([]byte("benchmark"))
				b.ResetTimer()
				cpu0, wall0 := cpuTime(), time.Now()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := s.Sign(rand.Reader, d[:], crypto.SHA256); err != nil {
							b.Error(err)
							return
						}
					}
				})
				// CPU time over wall time: how many cores the signing kept busy.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Since(wall0)), "cores")
			})
		}
	}
}

// BenchmarkAESGCM seals SSH-sized packets on the token and, for
// comparison, with Go's AES-GCM (the cpu provider's implementation).
func BenchmarkAESGCM(b *testing.B) {
	p, _ := benchProvider(b, "bench-gcm", 2)
	key := make([]byte, 16)
	alg := provider.MustLookup("aes128-gcm")
	tokenAEAD, err := p.NewAEAD(alg, key)
	if err != nil {
		b.Fatal(err)
	}
	defer provider.Release(tokenAEAD)
	block, _ := aes.NewCipher(key)
	goAEAD, _ := cipher.NewGCM(block)
	for _, size := range []int{1024, 32 << 10} {
		for _, c := range []struct {
			name string
			a    cipher.AEAD
		}{{"pkcs11", tokenAEAD}, {"go", goAEAD}} {
			b.Run(c.name+"/"+map[int]string{1024: "1KiB", 32 << 10: "32KiB"}[size], func(b *testing.B) {
				buf := make([]byte, size, size+16)
				nonce := make([]byte, 12)
				b.SetBytes(int64(size))
				loop(b, func() {
					nonce[0]++
					c.a.Seal(buf[:0], nonce, buf, nil)
				})
			})
		}
	}
}

// nullSign answers C_SignInit and C_Sign without doing any work, so that
// a benchmark through it measures only what the provider itself adds.
type nullSign struct{ api }

func (nullSign) SignInit(pkcs11.SessionHandle, []*pkcs11.Mechanism, pkcs11.ObjectHandle) error {
	return nil
}

func (nullSign) Sign(_ pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	return make([]byte, 64), nil
}

// BenchmarkSignOverhead is the provider's own cost per signature (pool,
// locks, handle cache, ASN.1): the token's work is replaced by a no-op.
// raw is the same two calls made directly.
func BenchmarkSignOverhead(b *testing.B) {
	tok := softhsm.NewToken(b, softhsm.WithLabel("bench-overhead"))
	null := false
	hooks := &testHooks{wrap: func(a api) api { return &switchable{api: a, null: &null} }}
	p, err := OpenURI(tok.TokenURI(), Config{MaxSessions: 1, HealthInterval: -1, testHooks: hooks})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	s, err := p.Generate(context.Background(), tok.URI("k"), ECDSAP256)
	if err != nil {
		b.Fatal(err)
	}
	null = true
	d := sha256.Sum256([]byte("overhead"))
	b.Run("provider", func(b *testing.B) {
		loop(b, func() {
			if _, err := s.Sign(rand.Reader, d[:], crypto.SHA256); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("raw", func(b *testing.B) {
		a := nullSign{}
		mech := []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_ECDSA, nil)}
		loop(b, func() {
			if err := a.SignInit(1, mech, 1); err != nil {
				b.Fatal(err)
			}
			if _, err := a.Sign(1, d[:]); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// switchable passes calls to the module until null is set, then answers
// C_SignInit and C_Sign itself.
type switchable struct {
	api
	null *bool
}

func (s *switchable) SignInit(h pkcs11.SessionHandle, m []*pkcs11.Mechanism, o pkcs11.ObjectHandle) error {
	if *s.null {
		return nullSign{}.SignInit(h, m, o)
	}
	return s.api.SignInit(h, m, o)
}

func (s *switchable) Sign(h pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	if *s.null {
		return nullSign{}.Sign(h, msg)
	}
	return s.api.Sign(h, msg)
}

// BenchmarkRawGCMParallel asks whether SoftHSM runs AES-GCM on several
// sessions at once, below the provider: each goroutine has a session
// and key object of its own and loops C_EncryptInit + C_Encrypt of a
// 32 KiB packet straight through miekg/pkcs11. sessions=N/tokens=M puts
// N sessions over M tokens. Throughput that does not grow with the
// sessions (while "cores" stays near 1) means the module serialises.
func BenchmarkRawGCMParallel(b *testing.B) {
	t1 := softhsm.NewToken(b, softhsm.WithLabel("raw0"))
	softhsm.NewToken(b, softhsm.WithLabel("raw1"))
	p, err := Open(Config{ModulePath: t1.Module, PINSource: t1.PINFile, HealthInterval: -1,
		Tokens: []*uri.URI{{Token: "raw0"}, {Token: "raw1"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for _, c := range []struct{ sessions, tokens int }{{1, 1}, {2, 1}, {2, 2}, {4, 2}} {
		b.Run(fmt.Sprintf("sessions=%d/tokens=%d", c.sessions, c.tokens), func(b *testing.B) {
			runRawGCM(b, p, c.sessions, c.tokens)
		})
	}
}

func runRawGCM(b *testing.B, p *Provider, sessions, tokens int) {
	a := p.c.mod.ctx
	type unit struct {
		h   pkcs11.SessionHandle
		obj pkcs11.ObjectHandle
	}
	var units []unit
	for i := range sessions {
		t := p.tokens[i%tokens]
		s, err := t.get(context.Background(), true)
		if err != nil {
			b.Fatal(err)
		}
		defer t.put(s)
		obj, err := a.CreateObject(s.h, []*pkcs11.Attribute{
			pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_SECRET_KEY),
			pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_AES),
			pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false),
			pkcs11.NewAttribute(pkcs11.CKA_ENCRYPT, true),
			pkcs11.NewAttribute(pkcs11.CKA_VALUE, make([]byte, 16)),
		})
		if err != nil {
			b.Fatal(err)
		}
		defer a.DestroyObject(s.h, obj)
		units = append(units, unit{s.h, obj})
	}
	msg := make([]byte, 32<<10)
	b.SetBytes(int64(len(msg)))
	var next atomic.Int64
	cpu0, wall0 := cpuTime(), time.Now()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, u := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nonce := make([]byte, 12)
			for next.Add(1) <= int64(b.N) {
				nonce[11]++
				params := pkcs11.NewGCMParams(nonce, nil, 128)
				mech := []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_AES_GCM, params)}
				err := a.EncryptInit(u.h, mech, u.obj)
				if err == nil {
					_, err = a.Encrypt(u.h, msg)
				}
				params.Free()
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Since(wall0)), "cores")
}
