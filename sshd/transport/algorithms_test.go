package transport

import (
	"slices"
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
		for _, name := range []string{c.aead, c.stream, c.keyStream, c.oneTimeMAC} {
			if name == "" {
				continue
			}
			alg, err := provider.Lookup(name)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if (c.aead == name || c.stream == name) && alg.KeySize != c.keySize {
				t.Errorf("%s: key size %d, catalog says %d", c.name, c.keySize, alg.KeySize)
			}
			if c.keyStream == name && 2*alg.KeySize != c.keySize {
				t.Errorf("%s: key size %d, want two %s keys", c.name, c.keySize, name)
			}
		}
	}
	for _, m := range macTable {
		if alg, err := provider.Lookup(m.hmac); err != nil || alg.KeySize != m.keySize || alg.TagSize != m.tagSize {
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
	reg := testRegistry(t)
	for _, list := range [][]string{DefaultKex(), DefaultMACs(), DefaultHostKeyAlgorithms(), DefaultCiphers(reg)} {
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

// TestDefaultCipherOrder forces the CPU probe both ways, with and without
// measurements.
func TestDefaultCipherOrder(t *testing.T) {
	aes := cpu.Features{Arch: "amd64", AES: true, CLMUL: true}
	hasAES := cpu.Detect().AES && cpu.Detect().CLMUL
	for _, tc := range []struct {
		name     string
		f        cpu.Features
		measured bool
		gcmFirst bool
	}{
		{"no AES, unmeasured", cpu.Features{}, false, false},
		{"AES, unmeasured", aes, false, true},
		{"no AES, measured", cpu.Features{}, true, false},
		{"AES, measured", aes, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.measured && tc.f.AES && !hasAES {
				t.Skip("this CPU has no AES instructions to measure")
			}
			var cal *provider.Calibrator
			if tc.measured {
				cal = provider.NewCalibrator(provider.CalibratorConfig{NoCache: true, Budget: 20 * time.Millisecond})
			}
			reg := registryWith(t, tc.f, cal)
			got := DefaultCiphers(reg)
			gcmFirst := tc.gcmFirst
			if tc.measured {
				// Follow what the registry measured (a loaded machine can
				// make AES-GCM look slow); the cases still differ in which
				// provider serves AES.
				gs, _ := scoreOf(t, reg, "aes128-gcm")
				cs, _ := scoreOf(t, reg, "chacha20-poly1305")
				gcmFirst = gs >= cs
				t.Logf("measured aes128-gcm %.0f, chacha20-poly1305 %.0f", gs, cs)
			}
			want := "chacha20-poly1305@openssh.com"
			if gcmFirst {
				want = "aes128-gcm@openssh.com"
			}
			if got[0] != want {
				t.Fatalf("offer %v, want %s first", got, want)
			}
			if len(got) != len(SupportedCiphers()) {
				t.Fatalf("offer %v lost a cipher", got)
			}
		})
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

func scoreOf(t *testing.T, reg *provider.Registry, alg string) (float64, bool) {
	ex, err := reg.Explain(alg)
	if err != nil {
		t.Fatal(err)
	}
	return chosenScore(reg, ex)
}
