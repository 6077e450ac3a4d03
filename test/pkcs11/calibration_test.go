//go:build cgo && !nopkcs11

package pkcs11_test

import (
	"testing"
	"time"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/software"
)

// TestCalibrationRanksCPUAboveSoftHSM: with the token registered beside
// the cpu and software providers, calibration measures all of them for
// bulk AES-GCM and "fastest" picks the CPU (or Go) over SoftHSM, whose
// fixed cost per call loses at SSH packet sizes.
func TestCalibrationRanksCPUAboveSoftHSM(t *testing.T) {
	tok := softhsmtest.NewToken(t, "calibrate")
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	cal := provider.NewCalibrator(provider.CalibratorConfig{NoCache: true, Budget: 20 * time.Millisecond})
	reg := provider.New(provider.Config{Calibrator: cal})
	defer reg.Close()
	for _, q := range []provider.Provider{p, cpu.New(cpu.Detect()), software.New()} {
		if err := reg.Register(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, alg := range []string{"aes128-gcm", "aes256-gcm"} {
		ex, err := reg.Explain(alg)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Chosen == p.Name() {
			t.Errorf("%s: calibration chose SoftHSM:\n%s", alg, ex)
		}
		var measured bool
		for _, c := range ex.Candidates {
			if c.Provider == p.Name() && c.Measurement != nil && c.Measurement.MBps32K > 0 {
				measured = true
			}
		}
		if !measured {
			t.Errorf("%s: the token was not measured:\n%s", alg, ex)
		}
		t.Logf("%s", ex)
	}
}
