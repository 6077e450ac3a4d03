//go:build cgo && !nopkcs11

package pkcs11

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsm"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// TestCloseWhileBusy closes the provider while goroutines sign, seal,
// open and derive, then uses every kind of object after Close. Before
// Close waited for calls in flight and refused new ones, this died with
// SIGSEGV (a call into the finalized module).
func TestCloseWhileBusy(t *testing.T) {
	tok := softhsm.NewToken(t, softhsm.WithLabel("closebusy"))
	p, err := OpenURI(tok.TokenURI(), Config{HealthInterval: 10 * time.Millisecond, MaxSessions: 32})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keyURI := tok.URI("busy")
	if _, err := p.Generate(ctx, keyURI, ECDSAP256); err != nil {
		t.Fatal(err)
	}
	s, err := p.Signer(ctx, keyURI)
	if err != nil {
		t.Fatal(err)
	}
	aeads := make([]interface {
		Seal(dst, nonce, pt, ad []byte) []byte
		Open(dst, nonce, ct, ad []byte) ([]byte, error)
	}, 4)
	for i := range aeads {
		a, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), make([]byte, 16))
		if err != nil {
			t.Fatal(err)
		}
		aeads[i] = a
	}
	ka, err := p.NewKeyAgreement(provider.MustLookup("ecdh-p256"))
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte("busy"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.Sign(rand.Reader, digest[:], crypto.SHA256)
			}
		}()
	}
	for _, a := range aeads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { recover() }() // Seal may panic after Close with fallback off; not here
			nonce := make([]byte, 12)
			for {
				select {
				case <-stop:
					return
				default:
				}
				ct := a.Seal(nil, nonce, []byte("packet"), nil)
				a.Open(nil, nonce, ct, nil)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	for !p.c.closed() {
		time.Sleep(time.Millisecond)
	}
	// Use after Close, while the goroutines keep trying.
	if _, err := s.Sign(rand.Reader, digest[:], crypto.SHA256); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("Sign after Close: %v, want ErrClosed", err)
	}
	if _, err := p.Signer(ctx, keyURI); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("Signer after Close: %v, want ErrClosed", err)
	}
	if _, err := p.NewAEAD(provider.MustLookup("aes128-gcm"), make([]byte, 16)); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("NewAEAD after Close: %v, want ErrClosed", err)
	}
	if _, err := ka.SharedSecret(ka.PublicKey()); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("SharedSecret after Close: %v, want ErrClosed", err)
	}
	if _, err := p.List(ctx, tok.TokenURI()); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("List after Close: %v, want ErrClosed", err)
	}
	if _, err := p.Generate(ctx, tok.URI("late"), Ed25519); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("Generate after Close: %v, want ErrClosed", err)
	}
	if _, err := aeads[0].Open(nil, make([]byte, 12), make([]byte, 32), nil); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("Open after Close: %v, want ErrClosed", err)
	}
	close(stop)
	wg.Wait()
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, a := range aeads {
		provider.Release(a)
	}
	provider.Release(s)
	provider.Release(ka)
}

// TestContextHonoured: a cancelled or expired context stops every
// operation that can wait before it reaches the token.
func TestContextHonoured(t *testing.T) {
	p, tok := open(t, "ctx", Config{})
	keyURI := tok.URI("k")
	if _, err := p.Generate(context.Background(), keyURI, ECDSAP256); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for name, ctx := range map[string]context.Context{"cancelled": cancelled, "expired": expired} {
		if _, err := p.Signer(ctx, keyURI); ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			t.Errorf("%s: Signer: %v", name, err)
		}
		if _, err := p.List(ctx, tok.TokenURI()); !errors.Is(err, ctx.Err()) {
			t.Errorf("%s: List: %v", name, err)
		}
		if _, err := p.Generate(ctx, tok.URI("never-"+name), RSA4096); !errors.Is(err, ctx.Err()) {
			t.Errorf("%s: Generate: %v", name, err)
		}
		if _, err := p.NewKeyAgreementContext(ctx, provider.MustLookup("ecdh-p256")); !errors.Is(err, ctx.Err()) {
			t.Errorf("%s: NewKeyAgreementContext: %v", name, err)
		}
		if _, err := OpenContext(ctx, Config{Tokens: []*uri.URI{uri.MustParse(tok.TokenURI())}, HealthInterval: -1}); !errors.Is(err, ctx.Err()) {
			t.Errorf("%s: OpenContext: %v", name, err)
		}
	}
	s, err := p.Signer(context.Background(), keyURI)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte("x"))
	if _, err := provider.SignContext(cancelled, s, rand.Reader, digest[:], crypto.SHA256); !errors.Is(err, context.Canceled) {
		t.Errorf("SignContext: %v", err)
	}
	keys, err := p.List(context.Background(), tok.TokenURI())
	if err != nil || len(keys) != 1 {
		t.Errorf("keys on the token: %d (%v), want only the first: the expired Generate must not have made one", len(keys), err)
	}
}

// TestAllowMissing: a token that is not there does not fail Open with
// AllowMissing; it is pending (not "gone or failing"), its keys fail
// closed, and it attaches when it appears. Without AllowMissing the same
// token is ErrNotFound, not ErrTokenUnavailable.
func TestAllowMissing(t *testing.T) {
	here := softhsm.NewToken(t, softhsm.WithLabel("present"))
	ref := strings.Replace(here.TokenURI(), "token=present", "token=latecomer", 1)
	_, err := OpenURI(ref, Config{HealthInterval: -1})
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, provider.ErrNotFound) || errors.Is(err, ErrTokenUnavailable) ||
		strings.Contains(err.Error(), "gone or failing") {
		t.Errorf("absent token without AllowMissing: %v, want not found (and not 'gone or failing')", err)
	}
	p, err := OpenURI(ref, Config{HealthInterval: 20 * time.Millisecond, AllowMissing: true})
	if err != nil {
		t.Fatalf("AllowMissing: %v", err)
	}
	defer p.Close()
	changed := make(chan struct{}, 1)
	p.NotifyChange(func() { changed <- struct{}{} })
	if pend := p.Pending(); len(pend) != 1 || !strings.Contains(pend[0], "latecomer") {
		t.Errorf("Pending() = %q", pend)
	}
	if len(p.Capabilities()) != 0 || !p.Matches("pkcs11:token=latecomer") {
		t.Errorf("pending provider: capabilities %v, matches its token %v", p.Capabilities(), p.Matches("pkcs11:token=latecomer"))
	}
	keyRef := strings.Replace(ref, "token=latecomer", "token=latecomer;object=k", 1)
	_, err = p.Signer(context.Background(), keyRef)
	if !errors.Is(err, ErrTokenUnavailable) || !errors.Is(err, provider.ErrUnavailable) || !strings.Contains(err.Error(), "not attached") {
		t.Errorf("key on a pending token: %v, want unavailable, saying it is not attached", err)
	}
	if h := p.Health(); len(h) != 1 || h[0].Up || !h[0].Pending {
		t.Errorf("Health = %+v", h)
	}
	late := softhsm.NewToken(t, softhsm.WithLabel("latecomer"))
	select {
	case <-changed:
	case <-testenv.Timeout(t):
		t.Fatalf("the token appeared but was not attached: %v", p.Pending())
	}
	if len(p.Pending()) != 0 || !provider.Supports(p, "ed25519", provider.OpSign) {
		t.Errorf("after attach: pending %v, capabilities %v", p.Pending(), p.Capabilities())
	}
	if _, err := p.Generate(context.Background(), late.URI("k"), Ed25519); err != nil {
		t.Fatalf("Generate on the attached token: %v", err)
	}
	if _, err := p.Signer(context.Background(), late.URI("k")); err != nil {
		t.Errorf("Signer on the attached token: %v", err)
	}
}

// TestCloseBounded: Close waits for a call in flight only up to
// CloseTimeout. A signature stuck in the module (an injected delay, as a
// hung device) makes Close return an error saying so without finalizing
// the module under it; the call then finishes normally, and the signer
// refuses later calls with ErrClosed.
func TestCloseBounded(t *testing.T) {
	faults := &pkcs11faults.Injector{}
	tok := softhsm.NewToken(t, softhsm.WithLabel("closebound"))
	p, err := OpenURI(tok.TokenURI(), Config{HealthInterval: -1, CloseTimeout: 20 * time.Millisecond, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keyURI := tok.URI("k")
	if _, err := p.Generate(ctx, keyURI, ECDSAP256); err != nil {
		t.Fatal(err)
	}
	s, err := p.Signer(ctx, keyURI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := faults.Slow(time.Second, time.Second, 1, "sign"); err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte("stuck"))
	signed := make(chan error, 1)
	go func() {
		_, err := s.Sign(rand.Reader, digest[:], crypto.SHA256)
		signed <- err
	}()
	for faults.Injected("sign") == 0 { // the call is in the module now
		time.Sleep(time.Millisecond)
	}
	err = p.Close()
	select {
	case <-signed:
		t.Fatal("Close waited for the stuck call to finish")
	default:
	}
	if err == nil || !strings.Contains(err.Error(), "still running") || !strings.Contains(err.Error(), "left initialized") {
		t.Errorf("Close with a call stuck in the module: %v", err)
	}
	if err := <-signed; err != nil {
		t.Errorf("the call in flight at Close: %v", err)
	}
	if _, err := s.Sign(rand.Reader, digest[:], crypto.SHA256); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("Sign after Close: %v, want ErrClosed", err)
	}
}

// TestPoolWaitHonoursContext: a signature waiting for a session of a full
// pool ends when its context does, not when WaitTimeout does: while a
// slow signature (an injected 1 s delay) holds the only session, a
// SignContext whose context expires first fails with the context's error
// before the slow one ends (and Signer refuses the expired context).
func TestPoolWaitHonoursContext(t *testing.T) {
	p, s, keyURI, slow := busySigner(t, "poolctx", Config{MaxSessions: 1, WaitTimeout: time.Minute})
	d := sha256.Sum256([]byte("x"))
	var err error
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = provider.SignContext(ctx, s, rand.Reader, d[:], crypto.SHA256)
	_, err2 := p.Signer(ctx, keyURI)
	select {
	case <-slow:
		t.Fatal("the waits ended only when the slow signature freed the session")
	default:
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SignContext waiting on a full pool: %v, want the context's deadline", err)
	}
	if !errors.Is(err2, context.DeadlineExceeded) {
		t.Errorf("Signer waiting on a full pool: %v, want the context's deadline", err2)
	}
	if err := <-slow; err != nil {
		t.Errorf("slow signature: %v", err)
	}
}

// TestDeadlineBoundsSign: Sign has no context; Config.Deadline bounds its
// wait for a session instead of WaitTimeout when it is shorter. While a
// slow signature holds the only session, a second Sign fails before the
// slow one ends.
func TestDeadlineBoundsSign(t *testing.T) {
	_, s, _, slow := busySigner(t, "deadline", Config{MaxSessions: 1, WaitTimeout: time.Minute, Deadline: 20 * time.Millisecond})
	d := sha256.Sum256([]byte("x"))
	var err error
	_, err = s.Sign(rand.Reader, d[:], crypto.SHA256)
	select {
	case <-slow:
		t.Fatal("the second Sign waited for the session past Config.Deadline")
	default:
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Sign with the only session busy past Config.Deadline: %v, want the deadline's error", err)
	}
	if err := <-slow; err != nil {
		t.Errorf("slow signature: %v", err)
	}
}

// busySigner opens a token with cfg, makes a P-256 key and starts a
// signature that holds a session for a second; it returns once that
// signature is in the token, with the channel its result arrives on.
func busySigner(t *testing.T, name string, cfg Config) (*Provider, crypto.Signer, string, chan error) {
	t.Helper()
	f := &pkcs11faults.Injector{}
	cfg.Faults = f
	p, tok := open(t, name, cfg)
	keyURI := tok.URI("k")
	if _, err := p.Generate(context.Background(), keyURI, ECDSAP256); err != nil {
		t.Fatal(err)
	}
	s, err := p.Signer(context.Background(), keyURI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Slow(time.Second, time.Second, 1, "sign"); err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256([]byte("x"))
	slow := make(chan error, 1)
	go func() { _, err := s.Sign(rand.Reader, d[:], crypto.SHA256); slow <- err }()
	for f.Injected("sign") == 0 {
		time.Sleep(time.Millisecond)
	}
	return p, s, keyURI, slow
}
