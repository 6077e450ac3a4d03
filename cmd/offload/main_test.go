package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestSpeedTable(t *testing.T) {
	code, out, errs := runCmd(t, "speed", "-seconds", "0.01", "-bytes", "16,1024", "-no-cache",
		"chacha20-poly1305", "ed25519", "x25519")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"offload ", "cpu features:", "1000s of bytes per second", "16 bytes", "1024 bytes",
		"chacha20-poly1305 (software)", "ed25519 (software)", "sign", "x25519 (software)", "derive"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "Doing chacha20-poly1305 (software) for 0.01s on 16 size blocks: ") {
		t.Errorf("no openssl-style progress on stderr:\n%s", errs)
	}
}

func TestSpeedJSONMulti(t *testing.T) {
	code, out, errs := runCmd(t, "speed", "-seconds", "0.01", "-bytes", "64", "-multi", "2", "-json",
		"-provider", "software", "-no-cache", "aes128-gcm")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep speedReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if rep.Multi != 2 || len(rep.Bulk) != 1 || rep.Bulk[0].Provider != "software" || rep.Bulk[0].BytesPerSec[0] <= 0 {
		t.Errorf("report = %+v", rep)
	}
}

func TestBadArguments(t *testing.T) {
	cases := [][]string{
		{"speed", "rot13"},
		{"speed", "-bytes", "0"},
		{"speed", "-provider", "nope"},
		{"speed", "-multi", "0"},
		{"providers", "-policy", "cheapest"},
		{"providers", "-pin", "aes128-gcm=nope"},
		{"providers", "-cpu-mask", "warp"},
		{"frobnicate"},
	}
	for _, args := range cases {
		code, _, errs := runCmd(t, args...)
		if code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 with a message", args, code, errs)
		}
	}
}

func TestProvidersJSONWithoutAES(t *testing.T) {
	code, out, errs := runCmd(t, "providers", "-json", "-no-cache", "-budget", "4ms", "-cpu-mask", "aes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep providersReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	for _, ex := range rep.Choices {
		if ex.Algorithm == "aes128-gcm" && ex.Chosen != "software" {
			t.Errorf("with AES masked, aes128-gcm served by %s", ex.Chosen)
		}
	}
	if len(rep.Providers) != 2 || rep.Providers[0].Name != "cpu" {
		t.Fatalf("providers = %+v", rep.Providers)
	}
	for _, c := range rep.Providers[0].Capabilities {
		if strings.HasPrefix(c.Algorithm, "aes") {
			t.Errorf("with AES masked, the cpu provider still offers %s", c.Algorithm)
		}
	}
}
