package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// SmokeEnv turns on TestSmoke, which runs the whole harness briefly
// against real servers. It is off by default: go test ./test/bench stays
// fast and needs no OpenSSH.
const SmokeEnv = "OFFLOAD_BENCH_SMOKE"

// TestSmoke runs one tiny round of every benchmark on OpenSSH and offload
// (and SoftHSM when OFFLOAD_BENCH_SMOKE_PKCS11=1) and checks that the
// report has a sample for every case and no error.
func TestSmoke(t *testing.T) {
	if os.Getenv(SmokeEnv) != "1" {
		t.Skipf("set %s=1 to run the benchmark harness once with tiny sizes", SmokeEnv)
	}
	for _, tool := range []string{"ssh", "sftp", "scp", "ssh-keygen"} {
		testenv.LookPath(t, tool, toolHint)
	}
	testenv.FirstFile(t, "sshd", toolHint, sshdPaths...)
	servers := "openssh,offload,offload-software"
	if os.Getenv("OFFLOAD_BENCH_SMOKE_PKCS11") == "1" {
		servers += ",offload-pkcs11"
	}
	out := t.TempDir()
	ctx, cancel := testenv.Context(t)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"-rounds", "1", "-size", "1MiB", "-clients", "1,4", "-handshakes", "4",
		"-latency-runs", "2", "-servers", servers, "-out", out,
		"-streams", "1,4", "-small-files", "20", "-rtt", "20ms", "-rtt-size", "1MiB", "-idle", "8"}, &stdout, &stderr)
	t.Log(stderr.String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range r.Cases {
		if len(c.Errors) > 0 || len(c.Samples) == 0 {
			t.Errorf("%s on %s: %d samples, errors %v", keyLabel(c.key()), c.Server, len(c.Samples), c.Errors)
		}
	}
	for _, f := range []string{"results.md", "pipe.svg", "handshakes.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestSmokeRows runs the compression and library-client rows once with
// tiny sizes: every case has a sample, the compression rows a factor
// (zlib was negotiated and used) and the library rows a cipher.
func TestSmokeRows(t *testing.T) {
	if os.Getenv(SmokeEnv) != "1" {
		t.Skipf("set %s=1 to run the benchmark harness once with tiny sizes", SmokeEnv)
	}
	testenv.LookPath(t, "ssh", toolHint)
	testenv.FirstFile(t, "sshd", toolHint, sshdPaths...)
	if !slices.ContainsFunc(pythonPaths, func(p string) bool { return exec.Command(p, "-c", "import paramiko").Run() == nil }) {
		t.Skip("no python3 with paramiko (on Debian: apt-get install python3-paramiko)")
	}
	out := t.TempDir()
	ctx, cancel := testenv.Context(t)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"-rounds", "1", "-size", "2MiB", "-servers", "openssh,offload", "-pkcs11=false",
		"-only", "compress,libclients", "-out", out}, &stdout, &stderr)
	t.Log(stderr.String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Cases) != 2*(4+8) {
		t.Errorf("%d cases, want %d", len(r.Cases), 2*(4+8))
	}
	for _, c := range r.Cases {
		if len(c.Errors) > 0 || len(c.Samples) == 0 {
			t.Errorf("%s on %s: %d samples, errors %v", keyLabel(c.key()), c.Server, len(c.Samples), c.Errors)
		}
		if isCompress(c.Kind) && c.CompressFactor == 0 || isLibClient(c.Kind) && c.Negotiated == "" {
			t.Errorf("%s on %s: no compression factor or cipher: %+v", keyLabel(c.key()), c.Server, c)
		}
	}
}
