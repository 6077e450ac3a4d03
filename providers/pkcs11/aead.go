//go:build cgo && !nopkcs11

package pkcs11

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/miekg/pkcs11"
	"github.com/offload/offload/provider"
)

const gcmTagSize = 16

var errOpen = errors.New("cipher: message authentication failed")

// gcm is AES-GCM on a token. It holds one session (and the key object
// created in it) for its life, so each call is C_EncryptInit + C_Encrypt
// on a session nobody else uses. A mutex makes it safe for concurrent use,
// as Go's own AEADs are.
//
// When the token fails, the AEAD moves its key to another session or
// token; when none works it finishes in Go with the same key (unless
// Config.NoFallback), so a connection survives the loss of its token.
type gcm struct {
	p   *Provider
	alg *provider.Algorithm

	mu sync.Mutex
	*gcmHold
	key      []byte // kept to move the key after a fault, zeroed on Close
	fallback cipher.AEAD
	closed   bool
}

var _ cipher.AEAD = (*gcm)(nil)

// gcmHold is the session and key object a gcm holds. It is separate so
// that an AEAD dropped without Close gives them back when collected.
type gcmHold struct {
	tok   *token
	s     session
	held  bool
	obj   pkcs11.ObjectHandle
	epoch uint64
}

func (p *Provider) newGCM(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	if alg.Name != "aes128-gcm" && alg.Name != "aes256-gcm" {
		return nil, &provider.UnsupportedError{Provider: p.name, Algorithm: alg.Name}
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	g := &gcm{p: p, alg: alg, key: bytes.Clone(key), gcmHold: &gcmHold{}}
	if err := g.attach(nil); err != nil {
		clear(g.key)
		return nil, err
	}
	runtime.AddCleanup(g, func(h *gcmHold) { h.release(false) }, g.gcmHold)
	return g, nil
}

// attach takes a session on the least busy token offering the algorithm
// (other than skip, when another will do) without waiting, and imports the
// key there.
func (g *gcm) attach(skip *token) error {
	ts := g.p.rankTokens(g.alg.Name, provider.OpSeal|provider.OpOpen)
	if len(ts) > 1 && skip != nil {
		for i, t := range ts {
			if t == skip {
				ts = append(append([]*token(nil), ts[:i]...), ts[i+1:]...)
				ts = append(ts, skip)
				break
			}
		}
	}
	if len(ts) == 0 {
		return g.p.noToken("import AES key", g.alg.Name, provider.OpSeal|provider.OpOpen)
	}
	var errs []error
	for _, t := range ts {
		s, err := t.getHeld()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		obj, epoch, err := g.importKey(t, s)
		if err != nil {
			t.unhold()
			if ClassOf(err) == ClassSession || ClassOf(err) == ClassDevice {
				t.discard(s)
			} else {
				t.put(s)
			}
			errs = append(errs, err)
			continue
		}
		g.tok, g.s, g.held, g.obj, g.epoch = t, s, true, obj, epoch
		return nil
	}
	return errors.Join(errs...)
}

func (g *gcm) importKey(t *token, s session) (pkcs11.ObjectHandle, uint64, error) {
	m := t.p.mod
	m.mu.RLock()
	defer m.mu.RUnlock()
	if s.gen != m.gen.Load() {
		return 0, 0, &Error{Op: "import AES key", Token: t.label(), Class: ClassSession, Err: errors.New("stale session")}
	}
	_, epoch, _ := t.state()
	obj, err := t.p.api.CreateObject(s.h, []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_SECRET_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_AES),
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false),
		pkcs11.NewAttribute(pkcs11.CKA_PRIVATE, true),
		pkcs11.NewAttribute(pkcs11.CKA_SENSITIVE, true),
		pkcs11.NewAttribute(pkcs11.CKA_EXTRACTABLE, false),
		pkcs11.NewAttribute(pkcs11.CKA_ENCRYPT, true),
		pkcs11.NewAttribute(pkcs11.CKA_DECRYPT, true),
		pkcs11.NewAttribute(pkcs11.CKA_VALUE, g.key),
	})
	if err != nil {
		return 0, 0, wrapErr(err, "import AES key", t.label(), "")
	}
	return obj, epoch, nil
}

// release frees the session and key object; broken ones are discarded.
func (g *gcmHold) release(broken bool) {
	if !g.held {
		return
	}
	t, s := g.tok, g.s
	g.held = false
	t.unhold()
	if broken {
		t.discard(s)
		return
	}
	m := t.p.mod
	m.mu.RLock()
	ok := s.gen == m.gen.Load()
	if ok {
		ok = t.p.api.DestroyObject(s.h, g.obj) == nil
	}
	m.mu.RUnlock()
	if ok {
		t.put(s)
	} else {
		<-t.sem
	}
}

func (g *gcm) NonceSize() int { return g.alg.NonceSize }
func (g *gcm) Overhead() int  { return gcmTagSize }

// Seal encrypts and authenticates plaintext as cipher.AEAD does.
func (g *gcm) Seal(dst, nonce, plaintext, additionalData []byte) []byte {
	ret, out := g.buffers(dst, nonce, plaintext, additionalData, len(plaintext)+gcmTagSize)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fallback == nil {
		ct, err := g.run("encrypt", func(a api, h pkcs11.SessionHandle, mech []*pkcs11.Mechanism) ([]byte, error) {
			if err := a.EncryptInit(h, mech, g.obj); err != nil {
				return nil, err
			}
			return a.Encrypt(h, plaintext)
		}, nonce, additionalData)
		if err == nil && len(ct) == len(out) {
			copy(out, ct)
			return ret
		}
		if err == nil {
			err = &Error{Op: "encrypt", Token: g.tok.label(), Class: ClassDevice,
				Err: fmt.Errorf("token returned %d bytes, want %d", len(ct), len(out))}
		}
		g.fail(err)
	}
	return g.fallback.Seal(dst, nonce, plaintext, additionalData)
}

// buffers checks the nonce and extends dst by n bytes for the output,
// panicking as the standard library's AEADs do on a wrong nonce length or
// an output that overlaps the input inexactly or the additional data.
func (g *gcm) buffers(dst, nonce, in, ad []byte, n int) (ret, out []byte) {
	if len(nonce) != g.alg.NonceSize {
		panic("crypto/cipher: incorrect nonce length given to GCM")
	}
	ret, out = sliceForAppend(dst, n)
	if inexactOverlap(out, in) {
		panic("crypto/cipher: invalid buffer overlap of output and input")
	}
	if anyOverlap(out, ad) {
		panic("crypto/cipher: invalid buffer overlap of output and additional data")
	}
	return ret, out
}

// Open decrypts and authenticates ciphertext as cipher.AEAD does.
func (g *gcm) Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error) {
	if len(ciphertext) < gcmTagSize {
		if len(nonce) != g.alg.NonceSize {
			panic("crypto/cipher: incorrect nonce length given to GCM")
		}
		return nil, errOpen
	}
	ret, out := g.buffers(dst, nonce, ciphertext, additionalData, len(ciphertext)-gcmTagSize)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fallback == nil {
		pt, err := g.run("decrypt", func(a api, h pkcs11.SessionHandle, mech []*pkcs11.Mechanism) ([]byte, error) {
			if err := a.DecryptInit(h, mech, g.obj); err != nil {
				return nil, err
			}
			return a.Decrypt(h, ciphertext)
		}, nonce, additionalData)
		switch {
		case err == nil && len(pt) == len(out):
			copy(out, pt)
			return ret, nil
		case ClassOf(err) == ClassInput:
			clear(out)
			return nil, errOpen
		case err == nil:
			err = &Error{Op: "decrypt", Token: g.tok.label(), Class: ClassDevice,
				Err: fmt.Errorf("token returned %d bytes, want %d", len(pt), len(out))}
		}
		if g.p.c.cfg.NoFallback {
			return nil, err
		}
		g.fail(err)
	}
	return g.fallback.Open(dst, nonce, ciphertext, additionalData)
}

// run performs one GCM operation on the held session, moving the key to a
// fresh session or another token when the session, key or token is lost.
// Retrying is safe: a failed call produced no output, and the same key,
// nonce and input give the same result.
func (g *gcm) run(op string, f func(api, pkcs11.SessionHandle, []*pkcs11.Mechanism) ([]byte, error),
	nonce, ad []byte) ([]byte, error) {
	if g.closed {
		return nil, &Error{Op: op, Class: ClassOther, Err: errors.New("AEAD used after Close")}
	}
	var last error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if !g.held {
			if err := g.attach(g.tok); err != nil {
				return nil, errors.Join(last, err)
			}
		}
		t := g.tok
		m := t.p.mod
		m.mu.RLock()
		_, epoch, _ := t.state()
		if g.s.gen != m.gen.Load() || g.epoch != epoch {
			m.mu.RUnlock()
			if g.s.gen == m.gen.Load() {
				g.release(false)
			} else {
				g.held = false
				t.unhold()
				<-t.sem
			}
			continue
		}
		params := pkcs11.NewGCMParams(nonce, ad, 8*gcmTagSize)
		out, err := f(t.p.api, g.s.h, []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_AES_GCM, params)})
		params.Free()
		m.mu.RUnlock()
		if err == nil {
			return out, nil
		}
		err = wrapErr(err, op, t.label(), "")
		last = err
		switch ClassOf(err) {
		case ClassSession, ClassHandle:
			g.release(true)
		case ClassDevice:
			g.release(true)
			if rerr := t.recover(g.s.gen, err); rerr != nil {
				t.p.log.Warn("token lost under an AEAD; moving the key", "token", t.label(), "err", err)
			}
		case ClassLogin:
			m.mu.RLock()
			lerr := t.ensureLogin(g.s.h)
			m.mu.RUnlock()
			if lerr != nil {
				return nil, lerr
			}
		default:
			return nil, err
		}
	}
	return nil, last
}

// fail switches the AEAD to Go's AES-GCM with the same key, or panics
// when fallback is off: Seal has no way to return an error.
func (g *gcm) fail(err error) {
	if g.p.c.cfg.NoFallback {
		panic(fmt.Sprintf("pkcs11: AES-GCM on the token failed and fallback is off: %v", err))
	}
	block, aerr := aes.NewCipher(g.key)
	if aerr != nil {
		panic(aerr)
	}
	g.fallback, aerr = cipher.NewGCM(block)
	if aerr != nil {
		panic(aerr)
	}
	g.p.c.log.Warn("AES-GCM continues in Go with the same key after the token failed", "algorithm", g.alg.Name, "err", err)
	g.release(true)
}

// FellBack reports whether the AEAD finished its work in Go after a token fault.
func (g *gcm) FellBack() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fallback != nil
}

// Close destroys the key object and returns the session to the pool.
func (g *gcm) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	g.release(false)
	clear(g.key)
	return nil
}

// gcmSelfTest checks the token's AES-GCM against Go's on one message, so
// a token that ignores the caller's IV or tag length is never used.
func (t *token) gcmSelfTest() error {
	slot, _, _ := t.state()
	h, err := t.p.api.OpenSession(slot, pkcs11.CKF_SERIAL_SESSION)
	if err != nil {
		return err
	}
	defer t.p.api.CloseSession(h)
	key := bytes.Repeat([]byte{0x42}, 16)
	obj, err := t.p.api.CreateObject(h, []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_SECRET_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_AES),
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, false),
		pkcs11.NewAttribute(pkcs11.CKA_ENCRYPT, true),
		pkcs11.NewAttribute(pkcs11.CKA_VALUE, key),
	})
	if err != nil {
		return err
	}
	defer t.p.api.DestroyObject(h, obj)
	nonce, ad, msg := []byte("offload-gcm!"), []byte("ad"), []byte("known answer for the token")
	params := pkcs11.NewGCMParams(nonce, ad, 128)
	defer params.Free()
	mech := []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_AES_GCM, params)}
	if err := t.p.api.EncryptInit(h, mech, obj); err != nil {
		return err
	}
	got, err := t.p.api.Encrypt(h, msg)
	if err != nil {
		return err
	}
	block, _ := aes.NewCipher(key)
	ref, _ := cipher.NewGCM(block)
	if want := ref.Seal(nil, nonce, msg, ad); !bytes.Equal(got, want) {
		return errors.New("ciphertext differs from Go's AES-GCM")
	}
	return nil
}

// sliceForAppend extends in by n bytes, as the standard library's AEADs do.
func sliceForAppend(in []byte, n int) (head, tail []byte) {
	if total := len(in) + n; cap(in) >= total {
		head = in[:total]
	} else {
		head = make([]byte, total)
		copy(head, in)
	}
	tail = head[len(in):]
	return
}
