package provider_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"strings"
	"testing"

	"github.com/offload/offload/provider"
)

// fake is a test provider offering AES-GCM with a chosen kind; it can be
// made to fail, and counts what it built.
type fake struct {
	name  string
	kind  provider.Kind
	algs  []string
	fail  error
	built int
}

func (f *fake) Name() string        { return f.name }
func (f *fake) Kind() provider.Kind { return f.kind }
func (f *fake) Close() error        { return nil }
func (f *fake) Capabilities() []provider.Capability {
	var out []provider.Capability
	for _, a := range f.algs {
		out = append(out, provider.Capability{Algorithm: a, Ops: provider.OpSeal | provider.OpOpen})
	}
	return out
}

func (f *fake) NewAEAD(alg *provider.Algorithm, key []byte) (cipher.AEAD, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	f.built++
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

var gcm = []string{"aes128-gcm", "aes256-gcm"}

func newReg(t *testing.T, ps ...provider.Provider) *provider.Registry {
	t.Helper()
	r := provider.New(provider.Config{})
	for _, p := range ps {
		if err := r.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func choose(t *testing.T, r *provider.Registry, alg string) *provider.Explanation {
	t.Helper()
	ex, err := r.Explain(alg)
	if err != nil {
		t.Fatalf("Explain(%s): %v", alg, err)
	}
	return ex
}

func TestRankByKindWithoutCalibration(t *testing.T) {
	sw := &fake{name: "sw", kind: provider.KindSoftware, algs: gcm}
	hw := &fake{name: "hw", kind: provider.KindHardware, algs: gcm}
	cpu := &fake{name: "cpu", kind: provider.KindCPU, algs: gcm}
	r := newReg(t, sw, hw, cpu)
	if got := choose(t, r, "aes128-gcm").Chosen; got != "cpu" {
		t.Errorf("fastest without measurements chose %s, want cpu", got)
	}
	if err := r.SetPolicy(provider.Policy{Mode: provider.ModePreferHardware}); err != nil {
		t.Fatal(err)
	}
	ex := choose(t, r, "aes128-gcm")
	if ex.Chosen != "hw" || !strings.Contains(ex.Reason, "prefer-hardware") {
		t.Errorf("prefer-hardware chose %s (%s), want hw", ex.Chosen, ex.Reason)
	}
	if err := r.SetPolicy(provider.Policy{Mode: provider.ModeSoftwareOnly}); err != nil {
		t.Fatal(err)
	}
	ex = choose(t, r, "aes128-gcm")
	if ex.Chosen != "sw" {
		t.Errorf("software-only chose %s", ex.Chosen)
	}
	for _, c := range ex.Candidates {
		if c.Provider != "sw" && c.Excluded != "policy software-only" {
			t.Errorf("candidate %s excluded for %q", c.Provider, c.Excluded)
		}
	}
}

func TestPinAndDeny(t *testing.T) {
	sw := &fake{name: "sw", kind: provider.KindSoftware, algs: gcm}
	cpu := &fake{name: "cpu", kind: provider.KindCPU, algs: gcm}
	r := newReg(t, sw, cpu)
	pins, err := provider.ParsePins("aes128-gcm=sw")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetPolicy(provider.Policy{Pins: pins}); err != nil {
		t.Fatal(err)
	}
	if ex := choose(t, r, "aes128-gcm"); ex.Chosen != "sw" || !strings.Contains(ex.Reason, "pinned") {
		t.Errorf("pin ignored: %s (%s)", ex.Chosen, ex.Reason)
	}
	if ex := choose(t, r, "aes256-gcm"); ex.Chosen != "cpu" {
		t.Errorf("pin leaked to aes256-gcm: %s", ex.Chosen)
	}
	deny, err := provider.ParseDenyList("aes256-gcm=cpu")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetPolicy(provider.Policy{Deny: deny}); err != nil {
		t.Fatal(err)
	}
	if ex := choose(t, r, "aes256-gcm"); ex.Chosen != "sw" {
		t.Errorf("deny ignored: %s", ex.Chosen)
	}
	deny, _ = provider.ParseDenyList("aes128-gcm")
	r.SetPolicy(provider.Policy{Deny: deny})
	_, err = r.AEAD("aes128-gcm", make([]byte, 16))
	if !errors.Is(err, provider.ErrNoProvider) || !strings.Contains(err.Error(), "denied") {
		t.Errorf("denied algorithm: err = %v", err)
	}
}

func TestFailOpenAndStrict(t *testing.T) {
	broken := &fake{name: "hw", kind: provider.KindHardware, algs: gcm, fail: errors.New("device removed")}
	sw := &fake{name: "sw", kind: provider.KindSoftware, algs: gcm}
	r := newReg(t, broken, sw)
	r.SetPolicy(provider.Policy{Mode: provider.ModePreferHardware})
	a, err := r.AEAD("aes128-gcm", make([]byte, 16))
	if err != nil || a == nil || sw.built != 1 {
		t.Fatalf("fail-open: err=%v built=%d", err, sw.built)
	}
	r.SetPolicy(provider.Policy{Mode: provider.ModePreferHardware, Strict: true})
	_, err = r.AEAD("aes128-gcm", make([]byte, 16))
	if err == nil || !strings.Contains(err.Error(), "device removed") || sw.built != 1 {
		t.Fatalf("strict: err=%v built=%d", err, sw.built)
	}
}

// A pinned provider that fails falls through to the others unless the
// policy is strict; then the others are not even candidates.
func TestPinFailOpen(t *testing.T) {
	broken := &fake{name: "hw", kind: provider.KindHardware, algs: gcm, fail: errors.New("token gone")}
	sw := &fake{name: "sw", kind: provider.KindSoftware, algs: gcm}
	r := newReg(t, broken, sw)
	pins := map[string]string{"aes128-gcm": "hw"}
	r.SetPolicy(provider.Policy{Pins: pins})
	if _, err := r.AEAD("aes128-gcm", make([]byte, 16)); err != nil || sw.built != 1 {
		t.Fatalf("pinned provider failed and no fallback: err=%v built=%d", err, sw.built)
	}
	r.SetPolicy(provider.Policy{Pins: pins, Strict: true})
	ex := choose(t, r, "aes128-gcm")
	if ex.Chosen != "hw" || ex.Candidates[1].Excluded == "" {
		t.Errorf("strict pin: %+v", ex)
	}
	if _, err := r.AEAD("aes128-gcm", make([]byte, 16)); err == nil || sw.built != 1 {
		t.Fatalf("strict pin fell back: err=%v built=%d", err, sw.built)
	}
}

func TestBadInputErrors(t *testing.T) {
	r := newReg(t, &fake{name: "sw", kind: provider.KindSoftware, algs: gcm})
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"unknown algorithm", func() error { _, err := r.AEAD("aes512-gcm", nil); return err }(), `"aes512-gcm"`},
		{"wrong family", func() error { _, err := r.AEAD("sha256", nil); return err }(), `"sha256" is a hash`},
		{"bad key size", func() error { _, err := r.AEAD("aes128-gcm", make([]byte, 15)); return err }(), "16-byte key, got 15"},
		{"unknown provider pin", r.SetPolicy(provider.Policy{Pins: map[string]string{"aes128-gcm": "nope"}}), `"nope"`},
		{"unknown deny provider", r.SetPolicy(provider.Policy{Deny: []provider.DenyEntry{{Provider: "nope"}}}), `"nope"`},
		{"malformed pin", func() error { _, err := provider.ParsePins("aes128-gcm"); return err }(), `"aes128-gcm"`},
		{"pin unknown alg", func() error { _, err := provider.ParsePins("rot13=sw"); return err }(), `"rot13"`},
		{"conflicting pins", func() error { _, err := provider.ParsePins("aes128-gcm=a,aes128-gcm=b"); return err }(), "already pinned"},
		{"bad deny", func() error { _, err := provider.ParseDeny("rot13=sw"); return err }(), `"rot13=sw"`},
		{"bad mode", func() error { _, err := provider.ParseMode("fastest-ish"); return err }(), `"fastest-ish"`},
		{"no provider", func() error { _, err := r.KeyAgreement("x25519"); return err }(), "no registered provider offers it"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %s", c.name, c.err, c.want)
		}
	}
}

func TestRegisterDuplicate(t *testing.T) {
	r := newReg(t, &fake{name: "a", kind: provider.KindSoftware})
	if err := r.Register(&fake{name: "a", kind: provider.KindCPU}); err == nil {
		t.Fatal("duplicate provider name accepted")
	}
}

func TestMetricsCountAEAD(t *testing.T) {
	m := provider.NewMetrics()
	r := provider.New(provider.Config{Metrics: m})
	r.Register(&fake{name: "sw", kind: provider.KindSoftware, algs: gcm})
	a, err := r.AEAD("aes128-gcm", make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, a.NonceSize())
	ct := a.Seal(nil, nonce, make([]byte, 100), nil)
	if _, err := a.Open(nil, nonce, ct, nil); err != nil {
		t.Fatal(err)
	}
	ct[0] ^= 1
	a.Open(nil, nonce, ct, nil)
	got := map[string]provider.Sample{}
	for _, s := range m.Snapshot() {
		got[s.Op] = s
	}
	if s := got["seal"]; s.Ops != 1 || s.Bytes != 100 {
		t.Errorf("seal counter = %+v", s)
	}
	if s := got["open"]; s.Ops != 2 || s.Errors != 1 {
		t.Errorf("open counter = %+v", s)
	}
}

func TestRedactRef(t *testing.T) {
	in := "pkcs11:token=a;object=k?module-path=/x.so&pin-value=123456"
	out := provider.RedactRef(in)
	if strings.Contains(out, "123456") || !strings.Contains(out, "module-path=/x.so") {
		t.Errorf("RedactRef = %q", out)
	}
}

type signerOnly struct{ fake }

func TestSignerNeverFallsBackAcrossRefs(t *testing.T) {
	r := newReg(t, &signerOnly{fake{name: "sw", kind: provider.KindSoftware}})
	_, err := r.Signer(context.Background(), "pkcs11:token=x;object=y?pin-value=secret")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("Signer with no provider for the ref: err = %v (must fail and not show the PIN)", err)
	}
}
