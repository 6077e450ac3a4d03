package provider_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
)

// A plan is built once and rebuilt when what it depends on changes: a
// provider registered, the policy set, a measurement recorded.
func TestPlanRebuiltOnChange(t *testing.T) {
	cal := provider.NewCalibrator(provider.CalibratorConfig{NoCache: true})
	r := provider.New(provider.Config{Calibrator: cal})
	sw := &fake{name: "sw", kind: provider.KindSoftware, algs: gcm}
	if err := r.Register(sw); err != nil {
		t.Fatal(err)
	}
	alg := provider.MustLookup("aes128-gcm")
	if err := cal.Record(alg, sw, provider.Measurement{MBps1K: 100, MBps32K: 100}); err != nil {
		t.Fatal(err)
	}
	if got := choose(t, r, "aes128-gcm").Chosen; got != "sw" {
		t.Fatalf("chose %s, want sw", got)
	}
	hw := &fake{name: "hw", kind: provider.KindHardware, algs: gcm}
	cal.Record(alg, hw, provider.Measurement{MBps1K: 10, MBps32K: 10})
	if err := r.Register(hw); err != nil {
		t.Fatal(err)
	}
	if got := choose(t, r, "aes128-gcm").Chosen; got != "sw" {
		t.Errorf("after registering a slower hw: chose %s, want sw", got)
	}
	cal.Record(alg, hw, provider.Measurement{MBps1K: 1000, MBps32K: 1000})
	if got := choose(t, r, "aes128-gcm").Chosen; got != "hw" {
		t.Errorf("after hw measured faster: chose %s, want hw", got)
	}
	if err := r.SetPolicy(provider.Policy{Pins: map[string]string{"aes128-gcm": "sw"}}); err != nil {
		t.Fatal(err)
	}
	if got := choose(t, r, "aes128-gcm").Chosen; got != "sw" {
		t.Errorf("after pinning sw: chose %s", got)
	}
}

// changing is a provider whose capabilities change after registration,
// as a PKCS #11 provider's do when its token attaches.
type changing struct {
	fake
	mu     sync.Mutex
	notify func()
}

func (c *changing) NotifyChange(f func()) { c.notify = f }

func (c *changing) Capabilities() []provider.Capability {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fake.Capabilities()
}

func (c *changing) Pending() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.algs) == 0 {
		return []string{"token unit0 not present"}
	}
	return nil
}

func (c *changing) attach() {
	c.mu.Lock()
	c.algs = gcm
	c.mu.Unlock()
	c.notify()
}

func TestProviderChangeRebuildsPlan(t *testing.T) {
	tok := &changing{fake: fake{name: "tok", kind: provider.KindHardware}}
	r := newReg(t, &fake{name: "sw", kind: provider.KindSoftware, algs: gcm}, tok)
	// A pin the token cannot serve yet is a warning, said by Explain.
	if err := r.SetPolicy(provider.Policy{Pins: map[string]string{"aes128-gcm": "tok"}}); err != nil {
		t.Fatalf("pin to a pending provider refused: %v", err)
	}
	ex := choose(t, r, "aes128-gcm")
	if ex.Chosen != "sw" || !strings.Contains(ex.Reason, "not in effect") || len(ex.Warnings) != 1 ||
		!strings.Contains(ex.Warnings[0], "unit0 not present") {
		t.Errorf("before the token attaches: %v", ex)
	}
	tok.attach()
	if ex := choose(t, r, "aes128-gcm"); ex.Chosen != "tok" || len(ex.Warnings) != 0 {
		t.Errorf("after it attaches: %v", ex)
	}
}

func TestPolicyValidation(t *testing.T) {
	sw := &fake{name: "sw", kind: provider.KindSoftware, algs: gcm}
	hw := &fake{name: "hw", kind: provider.KindHardware, algs: []string{"aes256-gcm"}}
	r := newReg(t, sw, hw)
	cases := []struct {
		name string
		pol  provider.Policy
		want string // "" for accepted
	}{
		{"unknown provider", provider.Policy{Pins: map[string]string{"aes128-gcm": "nope"}}, `"aes128-gcm=nope"`},
		{"unknown algorithm", provider.Policy{Pins: map[string]string{"rot13": "sw"}}, `"rot13=sw"`},
		{"pin and deny provider", provider.Policy{Pins: map[string]string{"aes128-gcm": "sw"},
			Deny: []provider.DenyEntry{{Provider: "sw"}}}, `also denied by "sw"`},
		{"pin and deny algorithm", provider.Policy{Pins: map[string]string{"aes128-gcm": "sw"},
			Deny: []provider.DenyEntry{{Algorithm: "aes128-gcm"}}}, `also denied by "aes128-gcm"`},
		{"pin and deny pair", provider.Policy{Pins: map[string]string{"aes128-gcm": "sw"},
			Deny: []provider.DenyEntry{{Algorithm: "aes128-gcm", Provider: "sw"}}}, "also denied"},
		{"pin a provider cannot serve", provider.Policy{Pins: map[string]string{"aes128-gcm": "hw"}}, `hw does not offer aes128-gcm`},
		{"deny unknown provider", provider.Policy{Deny: []provider.DenyEntry{{Provider: "nope"}}}, `"nope"`},
		{"deny other algorithm of the pinned", provider.Policy{Pins: map[string]string{"aes128-gcm": "sw"},
			Deny: []provider.DenyEntry{{Algorithm: "aes256-gcm", Provider: "sw"}}}, ""},
	}
	for _, c := range cases {
		err := r.SetPolicy(c.pol)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want it to say %s", c.name, err, c.want)
		}
	}
	// At New, an unknown provider may still be registered: a warning.
	r2 := provider.New(provider.Config{Policy: provider.Policy{Pins: map[string]string{"aes128-gcm": "later"}}})
	r2.Register(sw)
	ex := choose(t, r2, "aes128-gcm")
	if ex.Chosen != "sw" || len(ex.Warnings) == 0 || !strings.Contains(ex.Reason, `pin "later" not in effect`) {
		t.Errorf("pin to a provider not registered yet: %v", ex)
	}
	later := &fake{name: "later", kind: provider.KindCPU, algs: gcm}
	if err := r2.Register(later); err != nil {
		t.Fatal(err)
	}
	if ex := choose(t, r2, "aes128-gcm"); ex.Chosen != "later" || !strings.Contains(ex.Reason, "pinned") {
		t.Errorf("after the pinned provider registers: %v", ex)
	}
	// Register refuses a provider the pin names but that cannot serve.
	r3 := provider.New(provider.Config{Policy: provider.Policy{Pins: map[string]string{"aes128-gcm": "hw"}}})
	if err := r3.Register(hw); err == nil || !strings.Contains(err.Error(), "aes128-gcm=hw") {
		t.Errorf("Register of a pinned provider that cannot serve: err = %v", err)
	}
	// New with a contradictory policy refuses to serve, naming the entry.
	r4 := provider.New(provider.Config{Policy: provider.Policy{Pins: map[string]string{"aes128-gcm": "sw"},
		Deny: []provider.DenyEntry{{Provider: "sw"}}}})
	r4.Register(&fake{name: "cpu", kind: provider.KindCPU, algs: gcm})
	if _, err := r4.AEAD("aes128-gcm", make([]byte, 16)); err == nil || !strings.Contains(err.Error(), "aes128-gcm=sw") {
		t.Errorf("registry with a refused Config.Policy served: err = %v", err)
	}
}

func TestParseDenyURI(t *testing.T) {
	for in, want := range map[string]provider.DenyEntry{
		"pkcs11:token=web":               {Provider: "pkcs11:token=web"},
		"aes128-gcm=pkcs11:token=web":    {Algorithm: "aes128-gcm", Provider: "pkcs11:token=web"},
		"pkcs11:token=web;serial=1":      {Provider: "pkcs11:token=web;serial=1"},
		"software":                       {Provider: "software"},
		"aes128-ctr":                     {Algorithm: "aes128-ctr"},
		"aes128-gcm=software":            {Algorithm: "aes128-gcm", Provider: "software"},
		"pkcs11:token=a?module-name=x=y": {Provider: "pkcs11:token=a?module-name=x=y"},
	} {
		got, err := provider.ParseDeny(in)
		if err != nil || got != want {
			t.Errorf("ParseDeny(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"rot13=sw", "aes128-gcm=", ""} {
		if _, err := provider.ParseDeny(bad); err == nil {
			t.Errorf("ParseDeny(%q) accepted", bad)
		}
	}
	// A URI with a bad percent-encoding would match nothing and deny
	// nothing; a PIN has no place in a policy, which is printed. (A
	// scheme's own syntax is its providers' to check: TestSpecChecker.)
	for _, bad := range []string{
		"pkcs11:token=%zz", "aes128-gcm=file:/k%2", "pkcs11:token=web?pin-value=s3cret",
		"aes128-gcm=pkcs11:token=web?pin-source=/etc/pin", "pkcs11:token=web?PIN%2dVALUE=s3cret",
	} {
		_, err := provider.ParseDeny(bad)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.HasPrefix(err.Error(), "provider: bad policy entry") {
			t.Errorf("ParseDeny(%q) = %v, want a policy error without the PIN", bad, err)
		}
		if !strings.HasPrefix(bad, "pkcs11:") {
			_, err := provider.ParsePins(bad)
			if err == nil || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("ParsePins(%q) = %v, want a policy error", bad, err)
			}
		}
	}
	if _, err := provider.ParsePins("aes128-gcm=pkcs11:token=web?pin-value=s3cret"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("pin with a pin-value: %v", err)
	}
}

func TestProvenance(t *testing.T) {
	broken := &fake{name: "hw", kind: provider.KindHardware, algs: gcm, fail: errors.New("token gone")}
	sw := &fake{name: "sw", kind: provider.KindSoftware, algs: gcm}
	r := newReg(t, broken, sw)
	if err := r.SetPolicy(provider.Policy{Mode: provider.ModePreferHardware}); err != nil {
		t.Fatal(err)
	}
	a, err := r.AEAD("aes128-gcm", make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	pv, ok := provider.ProvenanceOf(a)
	if !ok || pv.Provider != "sw" || pv.Kind != provider.KindSoftware || !pv.Fallback || pv.FallbackFrom != "hw" ||
		pv.Algorithm != "aes128-gcm" {
		t.Errorf("fallback AEAD provenance = %+v", pv)
	}
	broken.fail = nil
	r.SetPolicy(provider.Policy{Mode: provider.ModePreferHardware})
	a, _ = r.AEAD("aes128-gcm", make([]byte, 16))
	pv, _ = provider.ProvenanceOf(a)
	if pv.Provider != "hw" || pv.Fallback || !strings.Contains(pv.Reason, "prefer-hardware") {
		t.Errorf("planned AEAD provenance = %+v", pv)
	}
	if s := pv.String(); !strings.Contains(s, "aes128-gcm by hw (hardware)") {
		t.Errorf("String() = %q", s)
	}
	if _, ok := provider.ProvenanceOf(struct{}{}); ok {
		t.Errorf("ProvenanceOf a value that cannot say reported true")
	}
}

// After Close the registry refuses every request with ErrClosed, and
// Close and Register racing each other never leave a provider both
// registered and closed.
func TestRegistryClosed(t *testing.T) {
	sw := &fake{name: "sw", kind: provider.KindSoftware, algs: gcm}
	r := newReg(t, sw)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	checks := map[string]error{
		"AEAD":     func() error { _, err := r.AEAD("aes128-gcm", make([]byte, 16)); return err }(),
		"Explain":  func() error { _, err := r.Explain("aes128-gcm"); return err }(),
		"Signer":   func() error { _, err := r.Signer(context.Background(), "/k"); return err }(),
		"Verify":   r.Verify(ed25519.PublicKey(make([]byte, 32)), "ed25519", []byte("m"), make([]byte, 64), crypto.Hash(0)),
		"Hash":     func() error { _, err := r.Hash("sha256"); return err }(),
		"Register": r.Register(&fake{name: "late", kind: provider.KindCPU}),
		"Policy":   r.SetPolicy(provider.Policy{}),
	}
	for what, err := range checks {
		if !errors.Is(err, provider.ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", what, err)
		}
	}
}

type closeCounter struct {
	fake
	mu     sync.Mutex
	closed int
}

func (c *closeCounter) Close() error {
	c.mu.Lock()
	c.closed++
	c.mu.Unlock()
	return nil
}

func TestConcurrentCloseAndRegister(t *testing.T) {
	for range 50 {
		r := provider.New(provider.Config{})
		var wg sync.WaitGroup
		ps := make([]*closeCounter, 8)
		errs := make([]error, len(ps))
		for i := range ps {
			ps[i] = &closeCounter{fake: fake{name: string(rune('a' + i)), kind: provider.KindSoftware, algs: gcm}}
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = r.Register(ps[i]) }()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.AEAD("aes128-gcm", make([]byte, 16))
			r.Close()
		}()
		wg.Wait()
		r.Close()
		for i, p := range ps {
			switch {
			case errs[i] == nil && p.closed != 1:
				t.Fatalf("provider %s registered but closed %d times", p.name, p.closed)
			case errs[i] != nil && (p.closed != 0 || !errors.Is(errs[i], provider.ErrClosed)):
				t.Fatalf("provider %s refused (%v) but closed %d times", p.name, errs[i], p.closed)
			}
		}
	}
}

// keyProvider opens in-memory Ed25519 keys for any ref.
type keyProvider struct {
	fake
	key ed25519.PrivateKey
}

func (k *keyProvider) CanOpen(string) bool { return true }
func (k *keyProvider) Signer(context.Context, string) (crypto.Signer, error) {
	return k.key, nil
}

func TestSignerMetricsAndProvenance(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	m := provider.NewMetrics()
	r := provider.New(provider.Config{Metrics: m})
	r.Register(&keyProvider{fake: fake{name: "keys", kind: provider.KindSoftware}, key: priv})
	s, err := r.Signer(context.Background(), "/k")
	if err != nil {
		t.Fatal(err)
	}
	_, inner := crypto.Signer(priv).(crypto.MessageSigner)
	if _, outer := s.(crypto.MessageSigner); inner != outer {
		t.Errorf("crypto.MessageSigner: provider's %v, registry's %v", inner, outer)
	}
	for range 3 {
		if _, err := s.Sign(rand.Reader, []byte("message"), crypto.Hash(0)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := provider.SignContext(ctx, s, rand.Reader, []byte("m"), crypto.Hash(0)); !errors.Is(err, context.Canceled) {
		t.Errorf("SignContext with a cancelled context: %v", err)
	}
	var got provider.Sample
	for _, x := range m.Snapshot() {
		if x.Op == "sign" {
			got = x
		}
	}
	if got.Provider != "keys" || got.Algorithm != "ed25519" || got.Ops != 4 || got.Errors != 1 || got.Timed != 4 ||
		len(got.Buckets) == 0 {
		t.Errorf("sign counter = %+v", got)
	}
	pv, ok := provider.ProvenanceOf(s)
	if !ok || pv.Provider != "keys" || pv.Algorithm != "ed25519" {
		t.Errorf("signer provenance = %+v", pv)
	}
	if err := r.Verify(priv.Public(), "ed25519", []byte("m"), ed25519.Sign(priv, []byte("m")), crypto.Hash(0)); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if err := r.Verify(priv.Public(), "ed25519", []byte("x"), make([]byte, 64), crypto.Hash(0)); !errors.Is(err, provider.ErrVerify) {
		t.Errorf("Verify of a bad signature: %v", err)
	}
}

func TestFallibleAEADThroughRegistry(t *testing.T) {
	r := newReg(t, &fake{name: "sw", kind: provider.KindSoftware, algs: gcm})
	a, err := r.AEAD("aes128-gcm", make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(provider.FallibleAEAD); !ok {
		t.Fatalf("the registry's AEAD is not a FallibleAEAD")
	}
	nonce := make([]byte, 12)
	ct, err := provider.Seal(a, nil, nonce, []byte("hello"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ct[0] ^= 1
	if _, err := provider.Open(a, nil, nonce, ct, nil); !errors.Is(err, provider.ErrAuthentication) {
		t.Errorf("Open of a forged message: %v, want ErrAuthentication", err)
	}
}

func TestMetricsAddAndSub(t *testing.T) {
	a, b := provider.NewMetrics(), provider.NewMetrics()
	a.Observe("p", "ed25519", provider.OpSign, 32, time.Millisecond, nil)
	first := a.Snapshot()[0]
	a.Observe("p", "ed25519", provider.OpSign, 32, 3*time.Millisecond, errors.New("x"))
	d := a.Snapshot()[0].Sub(first)
	if err := b.Add(d); err != nil {
		t.Fatal(err)
	}
	got := b.Snapshot()[0]
	if got.Ops != 1 || got.Errors != 1 || got.Timed != 1 || got.Latency != 3*time.Millisecond || got.Bytes != 32 {
		t.Errorf("delta added = %+v", got)
	}
	var n uint64
	for _, c := range got.Buckets {
		n += c
	}
	if n != 1 {
		t.Errorf("buckets %v, want one timed call", got.Buckets)
	}
	if err := b.Add(provider.Sample{Op: "nonsense"}); err == nil {
		t.Errorf("unknown op accepted")
	}
}

// Bad input never panics: nil and empty keys, nil providers, empty
// references, malformed peer keys.
func TestBadInputNoPanic(t *testing.T) {
	r := provider.New(provider.Config{Metrics: provider.NewMetrics()})
	defer r.Close()
	if err := r.Register(nil); err == nil {
		t.Errorf("Register(nil) accepted")
	}
	// What a constructor returns beside an error nobody checked (the
	// README's snippet leaves them out): an error, not a nil dereference.
	var notOpened *software.Provider
	if err := r.Register(notOpened); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("Register(a nil *software.Provider): %v", err)
	}
	r.Register(software.New())
	checks := map[string]error{
		"AEAD nil key":       func() error { _, err := r.AEAD("aes128-gcm", nil); return err }(),
		"Stream empty key":   func() error { _, err := r.Stream("aes128-ctr", []byte{}, make([]byte, 16)); return err }(),
		"Stream nil IV":      func() error { _, err := r.Stream("aes128-ctr", make([]byte, 16), nil); return err }(),
		"KeyStream nil key":  func() error { _, err := r.KeyStream("chacha20", nil); return err }(),
		"MAC nil key":        func() error { _, err := r.MAC("hmac-sha256", nil); return err }(),
		"Encapsulate nil":    func() error { _, _, err := r.Encapsulate("ml-kem-768", nil); return err }(),
		"Signer empty ref":   func() error { _, err := r.Signer(context.Background(), ""); return err }(),
		"Verify nil key":     r.Verify(nil, "ed25519", []byte("m"), nil, crypto.Hash(0)),
		"Explain empty name": func() error { _, err := r.Explain(""); return err }(),
	}
	for what, err := range checks {
		if err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
	ka, err := r.KeyAgreement("x25519")
	if err != nil {
		t.Fatal(err)
	}
	for _, peer := range [][]byte{nil, {}, make([]byte, 31), make([]byte, 32)} {
		if _, err := ka.SharedSecret(peer); err == nil {
			t.Errorf("SharedSecret(%d bytes of zeros) accepted", len(peer))
		}
	}
	d, err := r.Decapsulator("ml-kem-768")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decapsulate(nil); err == nil {
		t.Errorf("Decapsulate(nil) accepted")
	}
}

// TestCancelledContextErrors: a done context is refused before any
// provider is asked, with the package prefix and the context's error
// underneath (errors.Is), so a caller's log says where it was refused.
func TestCancelledContextErrors(t *testing.T) {
	r := newReg(t, software.New())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err1 := r.Signer(ctx, "/etc/offload/key")
	_, err2 := r.KeyAgreementContext(ctx, "x25519")
	_, key, _ := ed25519.GenerateKey(rand.Reader) // a plain crypto.Signer, not a ContextSigner
	_, err3 := provider.SignContext(ctx, key, rand.Reader, []byte("m"), crypto.Hash(0))
	for what, err := range map[string]error{"Signer": err1, "KeyAgreementContext": err2, "SignContext": err3} {
		if !errors.Is(err, context.Canceled) || !strings.HasPrefix(fmt.Sprint(err), "provider: ") {
			t.Errorf("%s with a cancelled context: %v, want %q and context.Canceled", what, err, "provider: ")
		}
	}
}

// specFake knows the syntax of "fake:" specs: only "fake:ok" parses.
type specFake struct{ fake }

func (f *specFake) CheckSpec(spec string) error {
	if strings.HasPrefix(spec, "fake:") && spec != "fake:ok" {
		return errors.New("fake: bad spec")
	}
	return nil
}

func (f *specFake) Matches(spec string) bool { return spec == "fake:ok" }

// TestSpecChecker: the registry refuses a pin or deny entry whose spec a
// registered provider finds malformed, naming the entry without its PIN;
// specs of other forms are not that provider's business.
func TestSpecChecker(t *testing.T) {
	p := &specFake{fake{name: "hw", kind: provider.KindHardware, algs: gcm}}
	r := newReg(t, p)
	for _, pol := range []provider.Policy{
		{Pins: map[string]string{"aes128-gcm": "fake:okk"}},
		{Deny: []provider.DenyEntry{{Provider: "fake:bad"}}},
	} {
		err := r.SetPolicy(pol)
		var pe *provider.PolicyError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "fake: bad spec") {
			t.Errorf("SetPolicy(%+v) = %v, want the provider's refusal", pol, err)
		}
	}
	if err := r.SetPolicy(provider.Policy{Pins: map[string]string{"aes128-gcm": "fake:ok"}}); err != nil {
		t.Errorf("a spec the provider accepts: %v", err)
	}
	if err := r.SetPolicy(provider.Policy{Pins: map[string]string{"aes128-gcm": "hw"}}); err != nil {
		t.Errorf("a plain name: %v", err)
	}
}
