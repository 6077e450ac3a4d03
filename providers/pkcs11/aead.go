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
	key         []byte // kept to move the key after a fault, zeroed on Close
	fallback    cipher.AEAD
	fallbackWhy error
	fellBack    func(nonce []byte, err error) // OnFallback's
	closed      bool
}

var (
	_ provider.FallibleAEAD     = (*gcm)(nil)
	_ provider.FallbackNotifier = (*gcm)(nil)
	_ provider.Provenancer      = (*gcm)(nil)
)

// gcmHold is the session and key object a gcm holds. It is separate so
// that an AEAD dropped without Close gives them back when collected.
type gcmHold struct {
	tok   *token
	s     session
	held  bool
	obj   pkcs11.ObjectHandle
	epoch uint64
}

// newGCM returns one key's AES-GCM: a single session, or a FanOut that
// takes up to Config.AEADLanes sessions (on the least busy tokens) as
// calls overlap.
func (p *Provider) newGCM(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	first, err := p.newGCMLane(alg, key, 0)
	if err != nil {
		return nil, err
	}
	n := p.c.cfg.aeadLanes()
	if n <= 1 {
		return first, nil
	}
	l := &gcmLanes{p: p, alg: alg, key: bytes.Clone(key)}
	if l.FanOut, err = provider.NewFanOut([]cipher.AEAD{first}, n, l.grow); err != nil {
		first.Close()
		clear(l.key)
		return nil, err
	}
	return l, nil
}

// gcmLanes is one key's AES-GCM over several sessions (provider.FanOut):
// each lane is a gcm of its own, with its own recovery and fallback.
type gcmLanes struct {
	*provider.FanOut
	p   *Provider
	alg *provider.Algorithm
	key []byte // for new lanes; zeroed on Close
}

// grow builds another lane, inside the provider's gate, on a token with
// sessions to spare: a quarter of its pool stays free for the first
// sessions of other connections' AEADs.
func (l *gcmLanes) grow() (cipher.AEAD, error) {
	if err := l.p.c.enter("import AES key", ""); err != nil {
		return nil, err
	}
	defer l.p.c.exit()
	return l.p.newGCMLane(l.alg, l.key, -1)
}

// Close releases every lane (sessions and key objects).
func (l *gcmLanes) Close() error {
	err := l.FanOut.Close() // waits for lanes being built
	clear(l.key)
	return err
}

// newGCMLane makes a single-session AEAD; spare < 0 marks an extra lane
// (see grow).
func (p *Provider) newGCMLane(alg *provider.Algorithm, key []byte, spare int) (*gcm, error) {
	if alg.Name != "aes128-gcm" && alg.Name != "aes256-gcm" {
		return nil, &provider.UnsupportedError{Provider: p.name, Algorithm: alg.Name}
	}
	if err := provider.CheckKey(alg, key); err != nil {
		return nil, err
	}
	g := &gcm{p: p, alg: alg, key: bytes.Clone(key), gcmHold: &gcmHold{}}
	if err := g.attach(nil, spare < 0); err != nil {
		clear(g.key)
		return nil, err
	}
	c := p.c
	runtime.AddCleanup(g, func(h *gcmHold) {
		if c.gate.enter() {
			h.release(false)
			c.exit()
		}
	}, g.gcmHold)
	return g, nil
}

// attach takes a session on the least busy token offering the algorithm
// (other than skip, when another will do) without waiting, and imports the
// key there. An extra lane leaves a quarter of each pool to spare.
func (g *gcm) attach(skip *token, extra bool) error {
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
		spare := 0
		if extra {
			spare = cap(t.sem) / 4
		}
		s, err := t.getHeld(spare)
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

// Seal encrypts and authenticates plaintext as cipher.AEAD does. When the
// token fails, or after the provider's Close, Seal finishes the work in Go
// with the same key (Open, OpenErr and SealErr return ErrClosed after
// Close); with Config.NoFallback it panics instead, since it cannot
// return an error: use SealErr.
func (g *gcm) Seal(dst, nonce, plaintext, additionalData []byte) []byte {
	out, err := g.seal(dst, nonce, plaintext, additionalData, !g.p.c.cfg.NoFallback)
	if err != nil {
		panic(fmt.Sprintf("pkcs11: AES-GCM on the token failed and fallback is off (use SealErr to get the error): %v", err))
	}
	return out
}

// SealErr is Seal returning a token fault as an error when fallback is
// off (Config.NoFallback), and ErrClosed after Close, instead of
// panicking or finishing in Go (see provider.FallibleAEAD).
func (g *gcm) SealErr(dst, nonce, plaintext, additionalData []byte) ([]byte, error) {
	return g.seal(dst, nonce, plaintext, additionalData, !g.p.c.cfg.NoFallback && !g.p.c.closed())
}

func (g *gcm) seal(dst, nonce, plaintext, additionalData []byte, fallback bool) ([]byte, error) {
	ret, out := g.buffers(dst, nonce, plaintext, additionalData, len(plaintext)+gcmTagSize)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || (!fallback && g.p.c.closed()) {
		return nil, &Error{Op: "encrypt", Class: ClassClosed, Err: fmt.Errorf("AEAD %w", ErrClosed)}
	}
	if g.fallback == nil {
		err := g.onToken("encrypt", func() ([]byte, error) {
			return g.run("encrypt", func(a api, h pkcs11.SessionHandle, mech []*pkcs11.Mechanism) ([]byte, error) {
				if err := a.EncryptInit(h, mech, g.obj); err != nil {
					return nil, err
				}
				return a.Encrypt(h, plaintext)
			}, nonce, additionalData)
		}, out)
		if err == nil {
			return ret, nil
		}
		if !fallback {
			return nil, err
		}
		g.fail(nonce, err)
	}
	return g.fallback.Seal(dst, nonce, plaintext, additionalData), nil
}

// onToken runs op on the token inside the provider's gate and copies its
// output, which must fill out exactly, into out.
func (g *gcm) onToken(name string, op func() ([]byte, error), out []byte) error {
	if err := g.p.c.enter(name, ""); err != nil {
		return err
	}
	res, err := op()
	g.p.c.exit()
	if err != nil {
		return err
	}
	if len(res) != len(out) {
		return &Error{Op: name, Token: g.tok.label(), Class: ClassDevice,
			Err: fmt.Errorf("token returned %d bytes, want %d", len(res), len(out))}
	}
	copy(out, res)
	return nil
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

// Open decrypts and authenticates ciphertext as cipher.AEAD does. A token
// fault finishes the work in Go unless Config.NoFallback; then, and after
// Close, Open returns the error.
func (g *gcm) Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error) {
	out, err := g.OpenErr(dst, nonce, ciphertext, additionalData)
	if errors.Is(err, provider.ErrAuthentication) {
		return nil, errOpen
	}
	return out, err
}

// OpenErr is Open with provider.FallibleAEAD's errors: one wrapping
// provider.ErrAuthentication when the message does not authenticate, a
// token fault or ErrClosed otherwise.
func (g *gcm) OpenErr(dst, nonce, ciphertext, additionalData []byte) ([]byte, error) {
	if len(ciphertext) < gcmTagSize {
		if len(nonce) != g.alg.NonceSize {
			panic("crypto/cipher: incorrect nonce length given to GCM")
		}
		return nil, provider.ErrAuthentication
	}
	ret, out := g.buffers(dst, nonce, ciphertext, additionalData, len(ciphertext)-gcmTagSize)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.p.c.closed() {
		return nil, &Error{Op: "decrypt", Class: ClassClosed, Err: fmt.Errorf("AEAD %w", ErrClosed)}
	}
	if g.fallback == nil {
		err := g.onToken("decrypt", func() ([]byte, error) {
			return g.run("decrypt", func(a api, h pkcs11.SessionHandle, mech []*pkcs11.Mechanism) ([]byte, error) {
				if err := a.DecryptInit(h, mech, g.obj); err != nil {
					return nil, err
				}
				return a.Decrypt(h, ciphertext)
			}, nonce, additionalData)
		}, out)
		switch {
		case err == nil:
			return ret, nil
		case ClassOf(err) == ClassInput:
			clear(out)
			return nil, provider.ErrAuthentication
		case g.p.c.cfg.NoFallback || ClassOf(err) == ClassClosed:
			return nil, err
		}
		g.fail(nonce, err)
	}
	pt, err := g.fallback.Open(dst, nonce, ciphertext, additionalData)
	if err != nil {
		return nil, provider.ErrAuthentication
	}
	return pt, nil
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
			if err := g.attach(g.tok, false); err != nil {
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

// OnFallback sets f, called when the AEAD moves to Go (provider.FallbackNotifier).
func (g *gcm) OnFallback(f func(nonce []byte, err error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fellBack = f
}

// fail switches the AEAD to Go's AES-GCM with the same key, during the
// operation on nonce; g.mu is held.
func (g *gcm) fail(nonce []byte, err error) {
	block, aerr := aes.NewCipher(g.key)
	if aerr == nil {
		g.fallback, aerr = cipher.NewGCM(block)
	}
	if aerr != nil { // the key was checked when the AEAD was made
		panic(fmt.Sprintf("pkcs11: AES-GCM in Go: %v", aerr))
	}
	g.fallbackWhy = err
	g.p.c.log.Warn("AES-GCM continues in Go with the same key after the token failed", "algorithm", g.alg.Name, "err", err)
	if g.fellBack != nil {
		g.fellBack(nonce, err) // the user's line: which connection, from which packet
	}
	if g.p.c.gate.enter() {
		g.release(true)
		g.p.c.exit()
	}
}

// Provenance says which token holds the AEAD's key, or that it moved to Go.
func (g *gcm) Provenance() provider.Provenance {
	g.mu.Lock()
	defer g.mu.Unlock()
	pv := provider.Provenance{Algorithm: g.alg.Name, Provider: g.p.name, Kind: provider.KindHardware}
	if g.tok != nil {
		slot, _, d := g.tok.state()
		pv.Token, pv.Serial, pv.Slot = d.Label, d.Serial, slot
	}
	if g.fallback != nil {
		pv.Fallback, pv.FallbackFrom = true, fmt.Sprintf("token %q", pv.Token)
		pv.Detail = "continuing in Go with the same key after the token failed"
	}
	return pv
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
	if g.p.c.gate.enter() {
		g.release(false)
		g.p.c.exit()
	}
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
