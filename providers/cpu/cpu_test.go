package cpu_test

import (
	"testing"
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
)

func registry(t *testing.T, f cpu.Features) *provider.Registry {
	t.Helper()
	cal := provider.NewCalibrator(provider.CalibratorConfig{NoCache: true, Budget: 40 * time.Millisecond})
	r := provider.New(provider.Config{Calibrator: cal})
	if err := r.Register(cpu.New(f)); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(software.New()); err != nil {
		t.Fatal(err)
	}
	return r
}

var aeads = []string{"aes128-gcm", "aes256-gcm", "chacha20-poly1305"}

// Without AES instructions the cpu provider offers no AES, AES comes from
// the portable software cipher, and ChaCha20-Poly1305 ranks first.
func TestNoAESHardwareFlipsOrder(t *testing.T) {
	r := registry(t, cpu.Features{Arch: "amd64"})
	if p := r.Providers()[0]; len(p.Capabilities()) != 0 {
		t.Fatalf("cpu provider without features offers %v", p.Capabilities())
	}
	ex, err := r.Explain("aes128-gcm")
	if err != nil || ex.Chosen != software.Name {
		t.Fatalf("aes128-gcm without AES hardware: %v, %v", ex, err)
	}
	if got := r.RankAlgorithms(aeads); got[0] != "chacha20-poly1305" {
		t.Errorf("order without AES hardware = %v, want chacha20-poly1305 first", got)
	}
}

// With AES instructions AES-GCM must rank first. Calibration on a busy
// machine is noisy, so a fresh calibration is tried up to three times; a
// CPU whose AES-GCM really is slower than ChaCha20 fails all three.
func TestAESHardwareFirst(t *testing.T) {
	f := cpu.Detect()
	if !f.AES || !f.CLMUL {
		t.Skip("this CPU has no AES + carry-less multiply; nothing to compare")
	}
	var got []string
	for try := 0; try < 3; try++ {
		r := registry(t, f)
		if ex, err := r.Explain("aes128-gcm"); err != nil || ex.Chosen != cpu.Name {
			t.Fatalf("aes128-gcm with AES hardware served by %v (%v)", ex, err)
		}
		if got = r.RankAlgorithms(aeads); got[0] != "chacha20-poly1305" {
			return
		}
	}
	t.Errorf("order with AES hardware = %v in three calibrations, want AES-GCM first", got)
}

func TestMask(t *testing.T) {
	f := cpu.Features{Arch: "amd64", AES: true, CLMUL: true, AVX2: true}
	m, err := cpu.Mask(f, "aes")
	if err != nil || m.AES || !m.CLMUL || !m.AVX2 {
		t.Fatalf("Mask(aes) = %+v, %v", m, err)
	}
	if m, _ := cpu.Mask(f, "none"); len(m.List()) != 0 {
		t.Errorf("Mask(none) left %v", m.List())
	}
	if _, err := cpu.Mask(f, "aes,warp-drive"); err == nil {
		t.Error("unknown feature accepted")
	}
	for _, c := range cpu.New(cpu.Features{AES: true}).Capabilities() {
		if c.Algorithm == "aes128-gcm" || c.Algorithm == "aes256-gcm" {
			t.Errorf("AES without CLMUL must offer AES-CTR and the block cipher only, not GCM (%s)", c.Algorithm)
		}
	}
}
