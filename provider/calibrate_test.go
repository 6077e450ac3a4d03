package provider_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/provider"
)

func calibrated(t *testing.T, dir string, log *bytes.Buffer, ps ...provider.Provider) (*provider.Registry, *provider.Calibrator) {
	t.Helper()
	cal := provider.NewCalibrator(provider.CalibratorConfig{Dir: dir, Budget: 4 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(log, nil))})
	r := provider.New(provider.Config{Calibrator: cal})
	for _, p := range ps {
		r.Register(p)
	}
	return r, cal
}

func TestCalibrationRanksAndCaches(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	a := &fake{name: "a", kind: provider.KindSoftware, algs: gcm}
	b := &fake{name: "b", kind: provider.KindCPU, algs: gcm}
	r, cal := calibrated(t, dir, &log, a, b)
	ex := choose(t, r, "aes128-gcm")
	if !strings.HasPrefix(ex.Reason, "fastest measured") {
		t.Fatalf("reason = %q", ex.Reason)
	}
	for _, c := range ex.Candidates {
		if c.Measurement == nil || c.Measurement.MBps32K <= 0 || c.Measurement.MBps1K <= 0 {
			t.Errorf("candidate %s has no measurement: %+v", c.Provider, c.Measurement)
		}
	}
	if _, err := os.Stat(cal.CacheFile()); err != nil {
		t.Fatalf("cache not written: %v", err)
	}
	// A second registry reads the cache instead of measuring.
	built := a.built + b.built
	r2, _ := calibrated(t, dir, &log, a, b)
	choose(t, r2, "aes128-gcm")
	if a.built+b.built != built {
		t.Errorf("cached results were measured again")
	}
}

func TestCalibrationCacheCorruptOrForeign(t *testing.T) {
	for name, content := range map[string]string{
		"corrupt":   "{not json",
		"foreign":   `{"Format":1,"Key":{"CPU":"Imaginary 9000","Go":"go0.1","GOARCH":"pdp11"},"Results":[]}`,
		"bad-entry": "",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var log bytes.Buffer
			a := &fake{name: "a", kind: provider.KindSoftware, algs: gcm}
			b := &fake{name: "b", kind: provider.KindCPU, algs: gcm}
			_, cal := calibrated(t, dir, &log, a, b)
			if name == "bad-entry" {
				key := provider.CurrentCacheKey()
				content = `{"Format":1,"Key":{"CPU":` + quote(key.CPU) + `,"Go":` + quote(key.Go) + `,"GOARCH":` + quote(key.GOARCH) +
					`},"Results":[{"Algorithm":"aes128-gcm","Provider":"a","MBps1K":-5,"MBps32K":1e300}]}`
			}
			os.MkdirAll(dir, 0o700)
			if err := os.WriteFile(cal.CacheFile(), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			r, _ := calibrated(t, dir, &log, a, b)
			ex := choose(t, r, "aes128-gcm")
			if a.built == 0 {
				t.Errorf("%s cache trusted: provider a never measured (%s)", name, ex.Reason)
			}
			if !strings.Contains(log.String(), "level=WARN") {
				t.Errorf("no warning for %s cache: %q", name, log.String())
			}
		})
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestCalibrationFilePerMachine(t *testing.T) {
	cal := provider.NewCalibrator(provider.CalibratorConfig{Dir: "/x"})
	if filepath.Dir(cal.CacheFile()) != "/x" || !strings.HasPrefix(filepath.Base(cal.CacheFile()), "calibration-") {
		t.Errorf("cache file %q", cal.CacheFile())
	}
	if provider.NewCalibrator(provider.CalibratorConfig{NoCache: true}).CacheFile() != "" {
		t.Error("NoCache still has a cache file")
	}
}

func TestRecordSteersRanking(t *testing.T) {
	var log bytes.Buffer
	a := &fake{name: "a", kind: provider.KindSoftware, algs: gcm}
	b := &fake{name: "b", kind: provider.KindCPU, algs: gcm}
	r, cal := calibrated(t, t.TempDir(), &log, a, b)
	alg := provider.MustLookup("aes128-gcm")
	if err := cal.Record(alg, a, provider.Measurement{MBps1K: 900, MBps32K: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := cal.Record(alg, b, provider.Measurement{MBps1K: 90, MBps32K: 100}); err != nil {
		t.Fatal(err)
	}
	if ex := choose(t, r, "aes128-gcm"); ex.Chosen != "a" {
		t.Errorf("recorded measurements ignored: chose %s (%s)", ex.Chosen, ex.Reason)
	}
	if a.built+b.built != 0 {
		t.Error("measured although measurements were recorded")
	}
	if err := cal.Record(alg, a, provider.Measurement{MBps1K: -1}); err == nil {
		t.Error("implausible measurement accepted")
	}
}
