package provider_test

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
)

// FuzzPolicyStrings parses CryptoPolicy and ProviderMap values (they come
// from sshd_config and -o on the command line): parsing must not panic,
// and what parses must print back to an equivalent value.
func FuzzPolicyStrings(f *testing.F) {
	for _, s := range []string{
		"fastest", "prefer-hardware", "SOFTWARE-ONLY",
		"aes128-gcm=cpu", "aes128-gcm=pkcs11:token=unit0,ecdh-p256=software",
		"aes128-ctr software aes128-gcm=software", "aes128-gcm=a=b", " , ,", "=", "x=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := provider.ParseMode(s); err == nil {
			if back, err := provider.ParseMode(m.String()); err != nil || back != m {
				t.Fatalf("mode %q -> %v -> %v, %v", s, m, back, err)
			}
		}
		if pins, err := provider.ParsePins(s); err == nil {
			var parts []string
			for _, alg := range slices.Sorted(maps.Keys(pins)) {
				parts = append(parts, alg+"="+pins[alg])
			}
			back, err := provider.ParsePins(strings.Join(parts, ","))
			if err != nil || !maps.Equal(back, pins) {
				t.Fatalf("pins %q -> %v -> %v, %v", s, pins, back, err)
			}
		}
		if deny, err := provider.ParseDenyList(s); err == nil {
			var parts []string
			for _, d := range deny {
				parts = append(parts, d.String())
			}
			back, err := provider.ParseDenyList(strings.Join(parts, ","))
			if err != nil || !slices.Equal(back, deny) {
				t.Fatalf("deny %q -> %v -> %v, %v", s, deny, back, err)
			}
		}
	})
}

// FuzzCalibrationCache feeds arbitrary bytes to the calibration cache
// file (it lives in the user's cache directory, which other programs can
// write): loading must not panic, and every cached measurement handed
// out must be usable for ranking (finite, positive score).
func FuzzCalibrationCache(f *testing.F) {
	sw := software.New()
	valid := func(results ...provider.Measurement) []byte {
		doc := map[string]any{"Format": 1, "Key": provider.CurrentCacheKey(), "Results": results}
		b, _ := json.Marshal(doc)
		return b
	}
	now := time.Unix(1700000000, 0)
	f.Add(valid(provider.Measurement{Algorithm: "aes128-gcm", Provider: sw.Name(), MBps1K: 900, MBps32K: 4000, At: now}))
	f.Add(valid(provider.Measurement{Algorithm: "ed25519", Provider: sw.Name(), OpsPerSec: 60000, At: now}))
	f.Add(valid(provider.Measurement{Algorithm: "aes128-gcm", Provider: sw.Name(), MBps1K: -1, MBps32K: 1e308, At: now}))
	// each rate positive, but their product underflows to a zero score
	f.Add(valid(provider.Measurement{Algorithm: "aes128-gcm", Provider: sw.Name(), MBps1K: 1e-200, MBps32K: 1e-200, At: now}))
	f.Add([]byte(`{"Format":1,"Key":{},"Results":null}`))
	f.Add([]byte("{"))
	dir := f.TempDir()
	algs := provider.Algorithms()
	f.Fuzz(func(t *testing.T, doc []byte) {
		c := provider.NewCalibrator(provider.CalibratorConfig{Dir: dir})
		if err := os.WriteFile(c.CacheFile(), doc, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, alg := range algs {
			m, ok := c.Cached(alg, sw)
			if !ok {
				continue
			}
			if s := m.Score(); math.IsNaN(s) || math.IsInf(s, 0) || s <= 0 {
				t.Fatalf("cached %s measurement has score %v: %+v", alg.Name, s, m)
			}
		}
	})
}
