package plan_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/plan"
)

func samplePlan() *plan.Plan {
	return &plan.Plan{
		Ciphers: []string{"aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com"}, MACs: []string{"hmac-sha2-256"},
		KexAlgorithms: []string{"curve25519-sha256"}, HostKeyAlgorithms: []string{"ssh-ed25519"}, ServerSigAlgs: []string{"ssh-ed25519"},
		Version: "SSH-2.0-test", RekeyBytes: 1 << 30, RekeyInterval: time.Hour, KexTimeout: -time.Second,
		HostPublicKeys: [][]byte{{1, 2}}, HostCertificates: [][]byte{{3}},
		HostKeyProvenance: map[string]string{"0102": "ed25519 by software", "03": "pkcs11"},
		CipherSelection:   "measured", CipherScores: map[string]float64{"aes128-gcm@openssh.com": 1234.5},
		Compression: true, ModuliFile: "/etc/ssh/moduli", Mode: "fastest",
		Preauth:  []plan.Assignment{{Primitive: "aes128-gcm", Provider: "cpu"}},
		Postauth: []plan.Assignment{{Primitive: "aes128-gcm", Provider: "pkcs11", Where: plan.InMonitor}},
	}
}

// The encoding gives back what was encoded, and refuses every cut, a
// trailing byte and another format version.
func TestPlanRoundTrip(t *testing.T) {
	for _, p := range []*plan.Plan{samplePlan(), {}} {
		b := p.Marshal()
		got, err := plan.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("decoded %+v, want %+v", got, p)
		}
		for n := 0; n < len(b); n++ {
			if _, err := plan.Parse(b[:n]); !errors.Is(err, plan.ErrFormat) {
				t.Fatalf("cut to %d of %d bytes: %v, want ErrFormat", n, len(b), err)
			}
		}
		if _, err := plan.Parse(append(b, 0)); !errors.Is(err, plan.ErrFormat) {
			t.Fatalf("trailing byte: %v, want ErrFormat", err)
		}
		b[0]++
		if _, err := plan.Parse(b); !errors.Is(err, plan.ErrFormat) {
			t.Fatalf("format %d: %v, want ErrFormat", b[0], err)
		}
	}
}

func FuzzPlan(f *testing.F) {
	f.Add(samplePlan().Marshal())
	f.Add((&plan.Plan{}).Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := plan.Parse(b)
		if err != nil {
			return
		}
		if enc := p.Marshal(); !bytes.Equal(enc, b) {
			t.Fatalf("accepted %x but it encodes as %x", b, enc)
		}
	})
}

// A child's registry built from a plan serves each primitive by the
// planned provider, whatever its own ranking would be.
func TestBuildFollowsThePlan(t *testing.T) {
	if !provider.Supports(cpu.New(cpu.Detect()), "aes256-gcm", provider.OpSeal) {
		t.Skip("this CPU has no AES-GCM instructions")
	}
	p := &plan.Plan{Mode: "fastest", Preauth: []plan.Assignment{
		{Primitive: "aes128-gcm", Provider: software.Name}, {Primitive: "aes256-gcm", Provider: cpu.Name}}}
	reg, err := p.Registry(plan.Preauth, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	for _, a := range p.Preauth {
		ex, err := reg.Explain(a.Primitive)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Chosen != a.Provider {
			t.Errorf("%s: the child chose %s, the plan says %s", a.Primitive, ex.Chosen, a.Provider)
		}
	}
	names := map[string]bool{}
	for _, pr := range reg.Providers() {
		names[pr.Name()] = true
	}
	if !names[cpu.Name] || !names[software.Name] || len(names) != 2 {
		t.Errorf("child registry has %v, want cpu and software", names)
	}
}

// Resolve follows the registry's choice; a plan built from it gives a
// child the same choice for every primitive.
func TestResolveMatchesRegistry(t *testing.T) {
	reg := provider.New(provider.Config{})
	defer reg.Close()
	for _, p := range []provider.Provider{cpu.New(cpu.Detect()), software.New()} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.SetPolicy(provider.Policy{Pins: map[string]string{"aes256-gcm": software.Name}}); err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{}
	p.Apply(plan.Resolve(reg))
	if a, _ := p.Lookup(plan.Postauth, "aes256-gcm"); a.Provider != software.Name {
		t.Fatalf("aes256-gcm planned %+v, want the pinned software", a)
	}
	child, err := p.Registry(plan.Postauth, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	for _, a := range p.Postauth {
		want, _ := reg.Explain(a.Primitive)
		got, err := child.Explain(a.Primitive)
		if err != nil || got.Chosen != want.Chosen {
			t.Errorf("%s: child %v (%v), monitor %s", a.Primitive, got, err, want.Chosen)
		}
	}
}
