package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestParseOpenSSLSpeed reads what OpenSSL 3.0's `speed -mr -elapsed`
// printed on stdout here (testdata), for a bulk and a public-key run.
func TestParseOpenSSLSpeed(t *testing.T) {
	b, err := os.ReadFile("testdata/openssl-speed-evp.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseOpenSSLSpeed(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.bulkAt(16384); got != 3861020672 {
		t.Errorf("AES-128-GCM at 16384 = %v", got)
	}
	if got := s.bulkAt(16); got != 0 {
		t.Errorf("a size openssl did not run gave %v", got)
	}
	b, err = os.ReadFile("testdata/openssl-speed-pk.txt")
	if err != nil {
		t.Fatal(err)
	}
	if s, err = parseOpenSSLSpeed(b); err != nil {
		t.Fatal(err)
	}
	want := map[opKey][2]float64{
		{opRSA, 2048}: {3168, 54975}, {opECDSA, 256}: {44645, 15878},
		{opECDH, 256}: {19424, 0}, {opECDH, 253}: {28730, 0}, {opEdDSA, 253}: {19394, 8617},
	}
	for k, v := range want {
		if s.ops[k] != v {
			t.Errorf("%v = %v, want %v", k, s.ops[k], v)
		}
	}
}

// TestParseOpenSSLSpeedErrors: malformed result lines are errors naming
// the line; lines of other kinds are ignored.
func TestParseOpenSSLSpeedErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"Doing aes-128-gcm for 3s\n",
		"+H:16:64\n+F:25:AES-128-GCM:1.0\n",
		"+H:16\n+F:25:AES-128-GCM:-1\n",
		"+H:16\n+F:25:AES-128-GCM:NaN\n",
		"+H:16\n+F:25:AES-128-GCM:Inf\n",
		"+H:x\n",
		"+H:0\n",
		"+F:1\n",
		"+F2:2:2048:3168.0\n",
		"+F4:3:0:1:2\n",
		"+F6:0:253:1:2\n",
		strings.Repeat("x", maxSpeedLine+1) + "\n",
	} {
		if _, err := parseOpenSSLSpeed([]byte(in)); err == nil {
			t.Errorf("%.60q: no error", in)
		}
	}
	s, err := parseOpenSSLSpeed([]byte("+DT:x:1:16\n+R:5:x:1.0\n+F9:1:2:3\n+H:16\n+F:1:x:10\n"))
	if err != nil || s.bulkAt(16) != 10 {
		t.Errorf("known lines beside unknown ones: %v, %v", s, err)
	}
}

func FuzzParseOpenSSLSpeed(f *testing.F) {
	for _, name := range []string{"testdata/openssl-speed-evp.txt", "testdata/openssl-speed-pk.txt"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("+H:16:64\n+F:1:a:1:2\n+F6:0:253:E:1:2\n+F5:3:256:1:0.1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseOpenSSLSpeed(b)
		if err != nil {
			return
		}
		for _, v := range s.bulk {
			if len(v) != len(s.sizes) {
				t.Fatalf("%d figures for %d sizes", len(v), len(s.sizes))
			}
		}
		for _, size := range s.sizes {
			if s.bulkAt(size) < 0 {
				t.Fatal("negative rate")
			}
		}
	})
}

// fakeOpenSSL answers like openssl 3.0 with fixed figures, and records
// the command lines.
type fakeOpenSSL struct{ calls [][]string }

func (f *fakeOpenSSL) run(_ context.Context, args ...string) ([]byte, error) {
	f.calls = append(f.calls, args)
	switch {
	case args[0] == "version":
		return []byte("OpenSSL 3.0.99 fake\n"), nil
	case slices.Contains(args, "aes-128-gcm"):
		size := args[slices.Index(args, "-bytes")+1]
		return []byte("+H:" + size + "\n+F:25:AES-128-GCM:2000000.00\n"), nil
	case slices.Contains(args, "ed25519"):
		return []byte("+F6:0:253:Ed25519:100.0:50.0\n+F5:22:253:400.0:0.0025\n"), nil
	}
	return nil, errors.New("unexpected command")
}

// TestCompareOpenSSL: openssl runs on each algorithm and size offload
// measured, and the ratios are offload's figure over openssl's.
func TestCompareOpenSSL(t *testing.T) {
	rep := &speedReport{
		Bulk: []bulkRow{
			{Algorithm: "aes128-gcm", Provider: "cpu", Sizes: []int{16, 32768}, BytesPerSec: []float64{1e6, 4e6}},
			{Algorithm: "aes128-gcm", Provider: "software", Sizes: []int{16, 32768}, BytesPerSec: []float64{5e5, 1e6}},
			{Algorithm: "poly1305", Provider: "software", Sizes: []int{16, 32768}, BytesPerSec: []float64{1, 2}},
		},
		Ops: []opRow{
			{Algorithm: "ed25519", Provider: "software", Op: "sign", PerSec: 200, VerifyPerSec: 25},
			{Algorithm: "x25519", Provider: "software", Op: "derive", PerSec: 800},
			{Algorithm: "ml-kem-768", Provider: "software", Op: "encapsulate", PerSec: 9},
		},
	}
	f := &fakeOpenSSL{}
	c, err := compareOpenSSL(context.Background(), f.run, &speedOptions{seconds: 0.2}, rep, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	// version, two sizes of aes-128-gcm (once for both providers), one pk run
	if len(f.calls) != 4 {
		t.Fatalf("openssl ran %d times: %q", len(f.calls), f.calls)
	}
	for _, call := range f.calls[1:] {
		if !slices.Contains(call, "-elapsed") || !slices.Contains(call, "-mr") || call[slices.Index(call, "-seconds")+1] != "1" {
			t.Errorf("openssl %q: want -mr -elapsed -seconds 1", call)
		}
	}
	if got := f.calls[3]; !slices.Contains(got, "ed25519") || !slices.Contains(got, "ecdhx25519") {
		t.Errorf("public-key run %q", got)
	}
	wantBulk := [][]float64{{0.5, 2}, {0.25, 0.5}, {0, 0}}
	if !equalRatios(c.BulkRatio, wantBulk) {
		t.Errorf("bulk ratios %v, want %v", c.BulkRatio, wantBulk)
	}
	wantOps := [][2]float64{{2, 0.5}, {2, 0}, {0, 0}}
	if !slices.Equal(c.OpsRatio, wantOps) {
		t.Errorf("op ratios %v, want %v", c.OpsRatio, wantOps)
	}
	rep.Compare = c
	var out strings.Builder
	printSpeed(&out, rep)
	for _, want := range []string{"openssl: OpenSSL 3.0.99 fake", "aes128-gcm (openssl)", "ratio offload/openssl",
		"0.50x", "2.00x", "ed25519 (openssl)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
}

func equalRatios(a, b [][]float64) bool {
	return slices.EqualFunc(a, b, func(x, y []float64) bool { return slices.Equal(x, y) })
}

// TestCompareOpenSSLMissing: without openssl on PATH the command says so
// before measuring anything.
func TestCompareOpenSSLMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, out, errs := runCmd(t, "speed", "-seconds", "0.01", "-compare", "openssl", "ed25519")
	if code != 1 || !strings.Contains(errs, "openssl is not installed") || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs := runCmd(t, "speed", "-compare", "libressl"); code != 2 {
		t.Errorf("-compare libressl: exit %d: %s", code, errs)
	}
}

// TestCompareOpenSSLReal runs the real openssl, when installed, briefly.
func TestCompareOpenSSLReal(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed")
	}
	if testing.Short() {
		t.Skip("runs openssl speed for a few seconds")
	}
	code, out, errs := runCmd(t, "speed", "-seconds", "0.01", "-bytes", "1024", "-json", "-compare", "openssl",
		"-no-cache", "-provider", "software", "chacha20-poly1305", "ed25519")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep speedReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	c := rep.Compare
	if c == nil || len(c.Bulk) != 1 || c.Bulk[0].BytesPerSec[0] <= 0 || len(c.Ops) != 1 || c.Ops[0].PerSec <= 0 ||
		c.Ops[0].VerifyPerSec <= 0 || c.BulkRatio[0][0] <= 0 || c.OpsRatio[0][0] <= 0 {
		t.Errorf("comparison %+v", c)
	}
}
