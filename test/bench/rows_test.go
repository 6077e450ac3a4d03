package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/offload/offload/test/bench/internal/xclient"
)

// TestMain lets the smoke test run this test binary as the x/crypto
// client, as the harness runs its own binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == xclientCommand {
		if err := xclient.Main(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseOnlyRows(t *testing.T) {
	all, err := parseOnly("all")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append(append([]string{}, compressKinds...), libKinds...) {
		if all[k] {
			t.Errorf("all includes %q, which runs only when named", k)
		}
	}
	kinds, err := parseOnly("compress,libclients")
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 4+8 || !kinds[kindZUpText] || !kinds["paramiko sftp-put"] || !kinds["xcrypto pipe-download"] {
		t.Errorf("kinds: %v", kinds)
	}
	if _, err := parseOnly("zlib"); err == nil || !strings.Contains(err.Error(), "libclients") {
		t.Errorf("unknown word: %v", err)
	}
}

func TestPlanRows(t *testing.T) {
	specs := []serverSpec{
		{Name: srvOpenSSH, Pipe: allCiphers, Files: true, Sessions: true},
		{Name: srvOffload, Pipe: allCiphers, Files: true, Sessions: true},
		{Name: srvSoftware, Pipe: allCiphers, Files: true},
	}
	s := Settings{Ciphers: []string{"aes128-gcm@openssh.com"}, XferCipher: "aes128-gcm@openssh.com"}
	kinds, _ := parseOnly("compress,libclients")
	plan := makePlan(s, specs, kinds)
	if len(plan) != 4+8 {
		t.Fatalf("plan has %d tasks: %+v", len(plan), plan)
	}
	for i, tk := range plan {
		if !reflect.DeepEqual(tk.Servers, []string{srvOpenSSH, srvOffload}) {
			t.Errorf("%s runs on %v", tk.Kind, tk.Servers)
		}
		want := ""
		if i < 4 {
			want = s.XferCipher
		}
		if tk.Cipher != want {
			t.Errorf("%s has cipher %q, want %q", tk.Kind, tk.Cipher, want)
		}
	}
	if plan[0].Kind != kindZUpText || plan[4].Kind != "xcrypto pipe-upload" || plan[11].Kind != "paramiko sftp-put" {
		t.Errorf("order: %s, %s, %s", plan[0].Kind, plan[4].Kind, plan[11].Kind)
	}
}

func TestWithCompression(t *testing.T) {
	got, err := withCompression([]string{"ssh", "-o", "Compression=no", "-p", "22", "host", "true"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ssh", "-v", "-o", "Compression=yes", "-p", "22", "host", "true"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := withCompression([]string{"ssh", "host"}); err == nil {
		t.Error("no Compression=no accepted")
	}
}

// sshDebug is ssh -v's output of a compressed connection.
const sshDebug = `debug1: kex: algorithm: curve25519-sha256
debug1: kex: server->client cipher: aes128-gcm@openssh.com MAC: <implicit> compression: zlib@openssh.com
debug1: kex: client->server cipher: aes128-gcm@openssh.com MAC: <implicit> compression: zlib@openssh.com
debug1: Exit status 0
debug1: compress outgoing: raw data 1000, compressed 250, factor 0.25
debug1: compress incoming: raw data 400, compressed 300, factor 0.75
`

func TestCompressionFactor(t *testing.T) {
	for _, tc := range []struct {
		upload bool
		want   float64
	}{{true, 0.25}, {false, 0.75}} {
		if f, err := compressionFactor(sshDebug, tc.upload); err != nil || f != tc.want {
			t.Errorf("upload %v: %v, %v; want %v", tc.upload, f, err, tc.want)
		}
	}
	none := strings.Replace(sshDebug, "server->client cipher: aes128-gcm@openssh.com MAC: <implicit> compression: zlib@openssh.com",
		"server->client cipher: aes128-gcm@openssh.com MAC: <implicit> compression: none", 1)
	if _, err := compressionFactor(none, false); err == nil || !strings.Contains(err.Error(), "not negotiated") {
		t.Errorf("compression none: %v", err)
	}
	if err := compressionNegotiated("debug1: Exit status 0\n"); err == nil {
		t.Error("no kex lines accepted")
	}
	noStats := strings.Split(sshDebug, "debug1: Exit")[0]
	if _, err := compressionFactor(noStats, true); err == nil {
		t.Error("no exit statistics accepted")
	}
}

func TestWriteRepeated(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.go"), filepath.Join(dir, "b.go")
	os.WriteFile(a, []byte("package a\n"), 0o600)
	os.WriteFile(b, []byte("package b\n"), 0o600)
	files, total, err := goSources(dir)
	if err != nil || total != 20 || !reflect.DeepEqual(files, []string{a, b}) {
		t.Fatalf("goSources: %v, %d, %v", files, total, err)
	}
	dst := filepath.Join(dir, "out.txt")
	if err := writeRepeated(dst, files, 25); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "package a\npackage b\npacka" {
		t.Errorf("got %q", got)
	}
	if _, _, err := goSources(t.TempDir()); err == nil {
		t.Error("an empty corpus accepted")
	}
}

func TestLibArgvAndResult(t *testing.T) {
	b := &bench{c: &client{addr: "127.0.0.1", user: "u"}, w: &workspace{ClientKey: "/k", HostKey: "/h", Payload: "/p", Local: "/l", Remote: "/r"}, size: 64}
	lc := &libClients{self: "/bench", python: "/py", paramiko: "/s.py"}
	src, dst := b.libPaths(kindSFTPPut)
	if got := lc.argv(b, 22, "paramiko sftp-put", src, dst); !reflect.DeepEqual(got,
		[]string{"/py", "/s.py", "127.0.0.1", "22", "u", "/k", "/h.pub", "sftp-put", "/p", "/r/lib.bin", "64"}) {
		t.Errorf("paramiko argv %q", got)
	}
	got := strings.Join(lc.argv(b, 22, "xcrypto pipe-download", "/p", ""), " ")
	if want := "/bench xcrypto-client -addr 127.0.0.1:22 -user u -key /k -hostkey /h.pub -op pipe-download -src /p -dst  -size 64"; got != want {
		t.Errorf("xcrypto argv %q, want %q", got, want)
	}
	r, err := b.checkLibResult([]byte(`{"Seconds":0.5,"Bytes":64,"CipherCS":"aes128-ctr","CipherSC":"aes128-ctr"}`), "")
	if err != nil || r.CipherSC != "aes128-ctr" {
		t.Errorf("result %+v, %v", r, err)
	}
	for _, bad := range []string{`{"Seconds":0.5,"Bytes":63,"CipherCS":"x"}`, `{"Bytes":64,"CipherCS":"x"}`, `Traceback`} {
		if _, err := b.checkLibResult([]byte(bad), ""); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// rowsReport has compression and library-client cases.
func rowsReport() *Report {
	r := sampleReport()
	r.TextCorpus = "the .go files"
	g := int64(1 << 30)
	add := func(kind, cipher, server string, samples ...Sample) {
		c := &Case{Kind: kind, Cipher: cipher, Server: server, Samples: samples}
		c.summarize()
		r.Cases = append(r.Cases, c)
	}
	add(kindZUpText, "aes128-gcm@openssh.com", srvOpenSSH, Sample{Seconds: 4, CPUSeconds: 8, ClientCPUSeconds: 4, Bytes: g, CompressFactor: 0.2})
	add(kindZUpText, "aes128-gcm@openssh.com", srvOffload, Sample{Seconds: 2, CPUSeconds: 2, ClientCPUSeconds: 4, Bytes: g, CompressFactor: 0.25})
	add("paramiko pipe-upload", "", srvOpenSSH, Sample{Seconds: 8, CPUSeconds: 4, Bytes: g, Negotiated: "aes128-ctr"})
	add("paramiko pipe-upload", "", srvOffload, Sample{Seconds: 4, CPUSeconds: 1, Bytes: g, Negotiated: "aes128-ctr"},
		Sample{Seconds: 4, CPUSeconds: 1, Bytes: g, Negotiated: negotiatedName("aes256-ctr", "aes128-ctr")})
	return r
}

func TestRowsMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := writeMarkdown(&b, rowsReport()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"text: the .go files; random:",
		"| pipe-upload -C text aes128-gcm@openssh.com | 268 | 537 (2.00x) |",
		"| pipe-upload -C text aes128-gcm@openssh.com | 8.00 | 2.00 (0.25x) |",
		"| pipe-upload -C text aes128-gcm@openssh.com | 0.200 | 0.250 |",
		"| paramiko pipe-upload | 134 | 268 (2.00x) |",
		"| paramiko pipe-upload | 4.00 | 1.00 (0.25x) |",
		"| paramiko pipe-upload | aes128-ctr | aes128-ctr, aes256-ctr / aes128-ctr |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(sampleMarkdown(t), "Compression") {
		t.Error("a report without the rows has their tables")
	}
}

func sampleMarkdown(t *testing.T) string {
	var b bytes.Buffer
	if err := writeMarkdown(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
