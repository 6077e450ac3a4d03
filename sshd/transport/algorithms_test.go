package transport

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
)

// TestTablesMatchCatalog: every row names registry algorithms that exist,
// with the catalog's sizes, and every default is a row.
func TestTablesMatchCatalog(t *testing.T) {
	for _, c := range cipherTable {
		for _, name := range []string{c.aead, c.stream, c.block, c.keyStream, c.oneTimeMAC} {
			if name == "" {
				continue
			}
			alg, err := provider.Lookup(name)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if (c.aead == name || c.stream == name || c.block == name) && alg.KeySize != c.keySize {
				t.Errorf("%s: key size %d, catalog says %d", c.name, c.keySize, alg.KeySize)
			}
			if c.keyStream == name && 2*alg.KeySize != c.keySize {
				t.Errorf("%s: key size %d, want two %s keys", c.name, c.keySize, name)
			}
		}
	}
	for _, m := range macTable {
		alg, err := provider.Lookup(m.hmac)
		truncated := strings.Contains(m.name, "-96") && m.tagSize == 12 && alg != nil && alg.TagSize > 12
		if err != nil || alg.KeySize != m.keySize || (alg.TagSize != m.tagSize && !truncated) {
			t.Errorf("%s: %v / catalog sizes differ", m.name, err)
		}
	}
	for _, k := range kexTable {
		for _, name := range []string{k.hash, k.agree, k.kem} {
			if _, err := provider.Lookup(name); name != "" && err != nil {
				t.Errorf("%s: %v", k.name, err)
			}
		}
	}
	for _, list := range [][]string{DefaultKex(), DefaultMACs(), DefaultHostKeyAlgorithms(), DefaultCiphers()} {
		for _, n := range list {
			if findKex(n) == nil && findMAC(n) == nil && findHostKey(n) == nil && findCipher(n) == nil {
				t.Errorf("default %q is not in any table", n)
			}
		}
	}
	if slices.Contains(DefaultKex(), "ecdh-sha2-nistp256") {
		t.Error("NIST curves must be off by default")
	}
}

func registryWith(t *testing.T, f cpu.Features, cal *provider.Calibrator) *provider.Registry {
	reg := provider.New(provider.Config{Calibrator: cal})
	for _, p := range []provider.Provider{cpu.New(f), software.New()} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// TestMeasuredSelection forces the CPU probe both ways, without
// calibration (the providers' kinds decide) and with real packet timing
// (software AES against ChaCha20 differ fifteenfold, AES instructions
// against it threefold, which no load hides): the measured offer to an
// OpenSSH client (chacha20-poly1305 first) leads with the fast cipher and
// never lists none the client accepts.
func TestMeasuredSelection(t *testing.T) {
	aes := cpu.Features{Arch: "amd64", AES: true, CLMUL: true}
	openssh := []string{"chacha20-poly1305@openssh.com", "aes128-ctr", "aes192-ctr", "aes256-ctr", "aes128-gcm@openssh.com", "aes256-gcm@openssh.com"}
	for _, tc := range []struct {
		name     string
		f        cpu.Features
		measured bool
		gcmFirst bool
	}{
		{"no AES, unmeasured", cpu.Features{}, false, false},
		{"AES, unmeasured", aes, false, true},
		{"no AES, measured", cpu.Features{}, true, false},
		{"AES, measured", cpu.Detect(), true, cpu.Detect().AES && cpu.Detect().CLMUL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cal *provider.Calibrator
			if tc.measured {
				cal = provider.NewCalibrator(provider.CalibratorConfig{NoCache: true, Budget: 20 * time.Millisecond})
			}
			reg := registryWith(t, tc.f, cal)
			offer := DefaultCiphers()
			got, _ := selectCiphers(offer, openssh, cipherScores(reg, offer))
			want := "chacha20-poly1305@openssh.com"
			if tc.gcmFirst {
				want = "aes128-gcm@openssh.com"
			}
			if chosen, _ := choose(openssh, got); chosen != want {
				t.Fatalf("measured offer %v: the client picks %s, want %s", got, chosen, want)
			}
			if n, _, _ := negotiateCipher(openssh, got, []string{"hmac-sha2-256-etm@openssh.com"}, DefaultMACs()); n == nil {
				t.Fatal("no common cipher with the measured offer")
			}
		})
	}
	if got, _ := selectCiphers(DefaultCiphers(), []string{"3des-cbc"}, nil); len(got) != len(DefaultCiphers()) {
		t.Errorf("a client accepting none of ours gets %v", got)
	}
}

// TestOfferDropsDenied: an algorithm denied by the policy is not offered.
func TestOfferDropsDenied(t *testing.T) {
	reg := testRegistry(t)
	deny, err := provider.ParseDenyList("aes128-gcm,chacha20")
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.SetPolicy(provider.Policy{Deny: deny}); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(&Config{Registry: reg, HostKeys: allHostKeys(t)[:1]})
	if err != nil {
		t.Fatal(err)
	}
	_, _, ciphers, _ := srv.Offer()
	if slices.Contains(ciphers, "aes128-gcm@openssh.com") || slices.Contains(ciphers, "chacha20-poly1305@openssh.com") {
		t.Fatalf("offer %v includes denied ciphers", ciphers)
	}
	if !slices.Contains(ciphers, "aes256-gcm@openssh.com") {
		t.Fatalf("offer %v lost aes256-gcm", ciphers)
	}
	if _, err := NewServer(&Config{Registry: reg, HostKeys: allHostKeys(t)[:1], Ciphers: []string{"aes128-gcm@openssh.com"}}); err == nil {
		t.Fatal("a server offering only a denied cipher was created")
	}
}

// TestAlgorithmsExport: the exported table has every row of every kind,
// the defaults of Default*, and primitives the catalog knows.
func TestAlgorithmsExport(t *testing.T) {
	byKind := map[AlgorithmKind][]string{}
	defs := map[AlgorithmKind][]string{}
	for _, a := range Algorithms() {
		byKind[a.Kind] = append(byKind[a.Kind], a.Name)
		if a.Default {
			defs[a.Kind] = append(defs[a.Kind], a.Name)
		}
		if len(a.Primitives) == 0 {
			t.Errorf("%s %s: no primitives", a.Kind, a.Name)
		}
		for _, p := range a.Primitives {
			if _, err := provider.Lookup(p); err != nil {
				t.Errorf("%s %s: %v", a.Kind, a.Name, err)
			}
		}
	}
	for _, tc := range []struct {
		kind           AlgorithmKind
		supported, def []string
	}{
		{KindCipher, SupportedCiphers(), defaults(cipherTable, func(c *cipherSpec) bool { return c.onByDefault }, func(c *cipherSpec) string { return c.name })},
		{KindMAC, SupportedMACs(), DefaultMACs()},
		{KindKex, SupportedKex(), DefaultKex()},
		{KindHostKey, SupportedHostKeyAlgorithms(), DefaultHostKeyAlgorithms()},
	} {
		if !slices.Equal(byKind[tc.kind], tc.supported) {
			t.Errorf("%s: Algorithms has %v, Supported %v", tc.kind, byKind[tc.kind], tc.supported)
		}
		if !slices.Equal(defs[tc.kind], tc.def) {
			t.Errorf("%s: Algorithms defaults %v, want %v", tc.kind, defs[tc.kind], tc.def)
		}
	}
	a, ok := LookupAlgorithm(KindCipher, "chacha20-poly1305@openssh.com")
	if !ok || !slices.Equal(a.Primitives, []string{"chacha20", "poly1305"}) {
		t.Errorf("chacha20-poly1305 row: %+v %v", a, ok)
	}
	if _, ok := LookupAlgorithm(KindMAC, "chacha20-poly1305@openssh.com"); ok {
		t.Error("a cipher found as a MAC")
	}
}
