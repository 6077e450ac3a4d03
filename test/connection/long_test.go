package connection_test

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// longSize is the transfer size of the OFFLOAD_LONG tests (1 GiB unless
// OFFLOAD_LONG_MB says otherwise).
func longSize(t *testing.T) int64 {
	if os.Getenv("OFFLOAD_LONG") != "1" {
		t.Skip("set OFFLOAD_LONG=1 for the 1 GiB transfer tests")
	}
	if mb, err := strconv.Atoi(os.Getenv("OFFLOAD_LONG_MB")); err == nil && mb > 0 {
		return int64(mb) << 20
	}
	return 1 << 30
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	var s [32]byte
	h.Sum(s[:0])
	return s
}

// TestSFTPLong puts and gets a big file with the OpenSSH sftp client
// and compares SHA-256 sums; it logs the rates.
func TestSFTPLong(t *testing.T) {
	size := longSize(t)
	f := newFixture(t, nil)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	out, _ := os.Create(src)
	io.CopyN(out, randReader{}, size)
	out.Close()
	for _, step := range []struct{ name, batch string }{
		{"put", "put " + src + " " + dir + "/remote\n"},
		{"get", "get " + dir + "/remote " + dir + "/back\n"},
	} {
		start := time.Now()
		if o, err := f.tool(t, "sftp", step.batch, "-b", "-", f.user+"@127.0.0.1"); err != nil {
			t.Fatalf("sftp %s: %v\n%s", step.name, err, o)
		}
		d := time.Since(start)
		t.Logf("sftp %s %d MiB: %v (%.0f MB/s)", step.name, size>>20, d.Round(time.Millisecond), float64(size)/d.Seconds()/1e6)
	}
	want := fileSum(t, src)
	for _, p := range []string{dir + "/remote", dir + "/back"} {
		if fileSum(t, p) != want {
			t.Errorf("%s differs from the source", p)
		}
	}
}

// randReader is a cheap deterministic non-compressible stream.
type randReader struct{}

func (randReader) Read(p []byte) (int, error) {
	x := uint64(0x9e3779b97f4a7c15)
	for i := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x)
	}
	return len(p), nil
}
