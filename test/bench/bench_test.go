package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/proctree"
)

func stat(pid, ppid int, u, s, cu, cs int) string {
	return strings.Join([]string{itoa2(pid), "(p)", "S", itoa2(ppid), "0 0 0 0 0 0 0 0 0", itoa2(u), itoa2(s), itoa2(cu), itoa2(cs), "20 0 1 0"}, " ")
}

func itoa2(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCPUMeter(t *testing.T) {
	dir := t.TempDir()
	write := func(pid, ppid, u, s, cu, cs int) {
		d := filepath.Join(dir, itoa2(pid))
		os.Mkdir(d, 0o755)
		os.WriteFile(filepath.Join(d, "stat"), []byte(stat(pid, ppid, u, s, cu, cs)), 0o644)
	}
	write(100, 1, 10, 5, 100, 50) // server, with reaped children
	write(101, 100, 3, 2, 0, 0)   // connection child
	write(102, 101, 1, 1, 4, 0)   // its child
	write(200, 1, 999, 999, 0, 0) // unrelated
	os.Mkdir(filepath.Join(dir, "self"), 0o755)
	m := cpuMeter{procDir: dir, pid: 100}
	sec, err := m.Seconds()
	if err != nil || math.Abs(sec-1.76) > 1e-9 {
		t.Fatalf("Seconds = %v, %v", sec, err)
	}
	if m.Children() != 2 {
		t.Fatalf("Children = %d", m.Children())
	}
	if err := m.Settle(0, 50*time.Millisecond); err == nil {
		t.Fatal("Settle with live children succeeded")
	}
	if err := m.Settle(2, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := append([]float64{}, c.in...)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !reflect.DeepEqual(in, c.in) {
			t.Errorf("median reordered its input")
		}
	}
	if !math.IsNaN(median(nil)) || !math.IsNaN(ratio(1, 0)) || !math.IsNaN(ratio(math.NaN(), 1)) {
		t.Error("empty median or bad ratio is not NaN")
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "64MiB": 64 << 20, "512K": 512 << 10, "1000": 1000, "2MB": 2e6, " 3 GiB ": 3 << 30} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1MiB", "1TiB", "abc", "1.5GiB", "2000GiB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) succeeded", bad)
		}
	}
	for n, want := range map[int64]string{1 << 30: "1GiB", 64 << 20: "64MiB", 1536: "1536B", 3 << 10: "3KiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"127.0.0.1", "127.1.2.3", "::1"} {
		if _, err := checkLoopback(ok); err != nil {
			t.Errorf("checkLoopback(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "0.0.0.0", "::", "10.0.0.1", "192.168.1.1", "localhost", "example.com", "8.8.8.8"} {
		if _, err := checkLoopback(bad); err == nil {
			t.Errorf("checkLoopback(%q) accepted it", bad)
		}
	}
	if _, err := parseOptions([]string{"-addr", "10.1.2.3"}, io.Discard); err == nil || !strings.Contains(err.Error(), "non-loopback") {
		t.Errorf("parseOptions with -addr 10.1.2.3: %v", err)
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions([]string{"-size", "64MiB", "-rounds", "1", "-servers", "openssh,offload", "-only", "pipe,latency"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Size != 64<<20 || o.Rounds != 1 || o.pkcs11 || !o.wantServer(srvOffload) || o.wantServer(srvSoftware) {
		t.Errorf("options: %+v", o)
	}
	if !o.kinds[kindPipeUp] || !o.kinds[kindLatency] || o.kinds[kindSFTPGet] {
		t.Errorf("kinds: %v", o.kinds)
	}
	for _, bad := range [][]string{{"-rounds", "0"}, {"-servers", "dropbear"}, {"-only", "ftp"}, {"-clients", "0"}, {"-size", "x"}, {"extra"}} {
		if _, err := parseOptions(bad, io.Discard); err == nil {
			t.Errorf("parseOptions(%q) succeeded", bad)
		}
	}
}

func TestFindToolsNamesEveryMissingTool(t *testing.T) {
	none := func(string) (string, error) { return "", errors.New("not found") }
	sshdPaths, softhsmModules = nil, nil
	_, err := findToolsWith(none, true)
	if err == nil {
		t.Fatal("no error without tools")
	}
	for _, name := range []string{"sshd", "ssh", "sftp", "scp", "ssh-keygen", "softhsm2-util", "libsofthsm2.so"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	all := func(n string) (string, error) { return "/bin/" + n, nil }
	if _, err := findToolsWith(all, false); err != nil {
		t.Fatal(err)
	}
}

func TestPlanAndRotate(t *testing.T) {
	specs := []serverSpec{
		{Name: srvOpenSSH, Pipe: allCiphers, Files: true, Sessions: true},
		{Name: srvPKCS11, Pipe: gcmOnly, Files: true},
	}
	s := Settings{Ciphers: []string{"aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com"},
		XferCipher: "aes128-gcm@openssh.com", Clients: []int{1, 8}}
	kinds, _ := parseOnly("all")
	plan := makePlan(s, specs, kinds)
	// 2 ciphers x 2 pipes + 6 file transfers + latency + 2 handshake
	// levels, and of the shapes (none of N given) the small files.
	if len(plan) != 4+6+1+2+2 {
		t.Fatalf("plan has %d tasks", len(plan))
	}
	for _, tk := range plan {
		pk := slicesContains(tk.Servers, srvPKCS11)
		if tk.Cipher == "chacha20-poly1305@openssh.com" && pk {
			t.Errorf("pkcs11 server runs chacha: %+v", tk)
		}
		if (tk.Kind == kindLatency || tk.Kind == kindHandshake) && pk {
			t.Errorf("pkcs11 server runs sessions: %+v", tk)
		}
	}
	if got := rotate([]string{"a", "b", "c"}, 4); !reflect.DeepEqual(got, []string{"b", "c", "a"}) {
		t.Errorf("rotate = %v", got)
	}
	if rotate(nil, 1) != nil {
		t.Error("rotate(nil) not nil")
	}
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// sampleReport is a small report with OpenSSH and offload figures.
func sampleReport() *Report {
	r := &Report{
		Started:  time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC),
		Settings: Settings{Command: "go run ./test/bench", Rounds: 3, Size: 1 << 30, Addr: "127.0.0.1", XferCipher: "aes128-gcm@openssh.com"},
		Servers:  []ServerInfo{{Name: srvOpenSSH, Desc: "OpenSSH <sshd>"}, {Name: srvOffload, Desc: "offload"}},
	}
	add := func(kind, cipher string, clients int, server string, samples ...Sample) {
		c := &Case{Kind: kind, Cipher: cipher, Clients: clients, Server: server, Samples: samples}
		c.summarize()
		r.Cases = append(r.Cases, c)
	}
	g := int64(1 << 30)
	add(kindPipeUp, "aes128-gcm@openssh.com", 0, srvOpenSSH, Sample{Seconds: 1, CPUSeconds: 2, Bytes: g}, Sample{Seconds: 2, CPUSeconds: 2, Bytes: g}, Sample{Seconds: 4, CPUSeconds: 2, Bytes: g})
	add(kindPipeUp, "aes128-gcm@openssh.com", 0, srvOffload, Sample{Seconds: 1, CPUSeconds: 1, Bytes: g})
	add(kindSCPUp, "aes128-gcm@openssh.com", 0, srvOpenSSH, Sample{Seconds: 2, CPUSeconds: 2, Bytes: g})
	add(kindSCPUp, "aes128-gcm@openssh.com", 0, srvOffload, Sample{Seconds: 1, CPUSeconds: 1, Bytes: g})
	add(kindLatency, "", 0, srvOpenSSH, Sample{Seconds: 0.2}, Sample{Seconds: 0.1}, Sample{Seconds: 0.3})
	add(kindLatency, "", 0, srvOffload, Sample{Seconds: 0.05})
	add(kindHandshake, "", 16, srvOpenSSH, Sample{Seconds: 2, Count: 64})
	add(kindHandshake, "", 16, srvOffload, Sample{Seconds: 0.5, Count: 64})
	r.Cases = append(r.Cases, &Case{Kind: kindSFTPGet, Cipher: "aes128-gcm@openssh.com", Server: srvOffload, Errors: []string{"boom"}})
	return r
}

func TestSummarize(t *testing.T) {
	r := sampleReport()
	c := r.find(srvOpenSSH, caseKey{kindPipeUp, "aes128-gcm@openssh.com", 0, 0})
	if math.Abs(c.MBPerSec-float64(1<<30)/2/1e6) > 1e-6 || c.CPUPerGiB != 2 {
		t.Errorf("pipe case: %+v", c)
	}
	if c := r.find(srvOpenSSH, caseKey{kindLatency, "", 0, 0}); math.Abs(c.Millis-200) > 1e-9 {
		t.Errorf("latency: %v", c.Millis)
	}
	if c := r.find(srvOffload, caseKey{kindHandshake, "", 16, 0}); c.PerSec != 128 {
		t.Errorf("handshakes: %v", c.PerSec)
	}
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := writeMarkdown(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| pipe-upload aes128-gcm@openssh.com | 537 | 1074 (2.00x) |",  // throughput ratio
		"| pipe-upload aes128-gcm@openssh.com | 2.00 | 1.00 (0.50x) |", // CPU per GiB
		"| ssh-true | 200.0 | 50.0 (0.25x) |",
		"| handshakes, 16 clients | 32.0 | 128.0 (4.00x) |",
		"| offload | 1.00 | 1.00 | 100 | 0.50x | 0.50x |", // provider table
		"| sftp-get aes128-gcm@openssh.com | – | failed |",
		"- sftp-get aes128-gcm@openssh.com on offload: boom",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var b bytes.Buffer
	r := sampleReport()
	if err := writeJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Cases) != len(r.Cases) || back.Cases[0].MBPerSec != r.Cases[0].MBPerSec || back.Settings.Size != 1<<30 {
		t.Errorf("round trip lost data: %+v", back.Settings)
	}
}

func TestSVG(t *testing.T) {
	r := sampleReport()
	plots := buildPlots(r)
	names := map[string]bool{}
	for _, p := range plots {
		names[p.File] = true
		var b bytes.Buffer
		if err := p.Chart.WriteSVG(&b); err != nil {
			t.Fatal(err)
		}
		checkSVG(t, p.File, b.Bytes())
	}
	for _, want := range []string{"pipe.svg", "files.svg", "cpu.svg", "latency.svg", "handshakes.svg"} {
		if !names[want] {
			t.Errorf("no %s", want)
		}
	}
	c := &barChart{Title: "a <b> & c", Groups: []string{"x"}, Series: []string{"s1", "s2"}, Values: [][]float64{{2}, {math.NaN()}}}
	var b bytes.Buffer
	c.WriteSVG(&b)
	checkSVG(t, "escaped", b.Bytes())
	if n := strings.Count(b.String(), "<rect x="); n != 1+2 { // one bar, two legend boxes
		t.Errorf("%d rects, want 3 (NaN bars are left out)", n)
	}
	dir := t.TempDir()
	pngConverters = nil // keep the test fast and independent of ImageMagick
	files, err := writePlots(dir, r)
	if err != nil || len(files) < 5 {
		t.Fatalf("writePlots: %v, %v", files, err)
	}
}

// checkSVG parses the document as XML and checks the root element.
func checkSVG(t *testing.T, name string, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var root string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed XML: %v", name, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q", name, root)
	}
}

func TestNiceStepAndTicks(t *testing.T) {
	for in, want := range map[float64]float64{0.3: 0.5, 1: 1, 1.1: 2, 3: 5, 7: 10, 180: 200, 0: 1} {
		if got := niceStep(in); math.Abs(got-want) > 1e-12 {
			t.Errorf("niceStep(%v) = %v, want %v", in, got, want)
		}
	}
	if top, step := axisMax(1074); top != 1500 || step != 500 {
		t.Errorf("axisMax(1074) = %v, %v", top, step)
	}
	for in, want := range map[float64]string{0: "0", 1200: "1200", 2.5: "2.5", 2: "2", 0.05: "0.05"} {
		if got := fmtTick(in); got != want {
			t.Errorf("fmtTick(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestMachineParsers(t *testing.T) {
	model, flags := parseCPUInfo("processor : 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu aes avx2 sha_ni\n\nprocessor : 1\nmodel name : other\n")
	if model != "AMD EPYC" || !reflect.DeepEqual(flags, []string{"aes", "avx2", "sha_ni"}) {
		t.Errorf("parseCPUInfo = %q, %v", model, flags)
	}
	if got := parseLoadAvg("0.50 1.25 2.00 1/100 42\n"); got != [3]float64{0.5, 1.25, 2} {
		t.Errorf("parseLoadAvg = %v", got)
	}
}

func TestRemoveStale(t *testing.T) {
	base := t.TempDir()
	mk := func(name, owner string) string {
		d := filepath.Join(base, name)
		os.Mkdir(d, 0o700)
		if owner != "" {
			os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o600)
		}
		return d
	}
	dead := mk("run-dead", "999999999")
	live := mk("run-live", itoa2(os.Getpid()))
	noOwner := mk("run-noowner", "")
	other := mk("keep-me", "999999999")
	removeStale(base)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Error("stale workspace of a dead harness was kept")
	}
	for _, d := range []string{live, noOwner, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}

func TestOffloadConfigFlag(t *testing.T) {
	o, err := parseOptions([]string{"-offload-config", "ChannelWindowSize 2097152", "-offload-config", "LogLevel INFO", "-budget", "5m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.extra) != 2 || o.extra[1] != "LogLevel INFO" || o.budget != 5*time.Minute {
		t.Errorf("extra %q, budget %v", o.extra, o.budget)
	}
	w := &workspace{HostKey: "/k", AuthorizedKeys: "/a", Dir: "/d"}
	spec := serverSpec{Name: srvOffload, Extra: o.extra}
	text := configText(spec, w, "127.0.0.1", 2222, defaultCiphers)
	for _, want := range []string{"Port 2222\n", "ListenAddress 127.0.0.1\n", "ChannelWindowSize 2097152\n", "AcceptEnv SHLVL\n", "CalibrationCache /d/calibration\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("offload config lacks %q:\n%s", want, text)
		}
	}
	ossh := configText(serverSpec{Name: srvOpenSSH, OpenSSH: true}, w, "127.0.0.1", 2222, defaultCiphers)
	if strings.Contains(ossh, "ChannelWindowSize") || !strings.Contains(ossh, "UsePAM no\n") || !strings.Contains(ossh, "StrictModes no\n") {
		t.Errorf("OpenSSH config:\n%s", ossh)
	}
}

// TestSessionTicks: the session programs below a server are the processes
// that are not the server's own (by command name) whose parent is; each
// counts its subtree, and the server's own processes count nothing.
func TestSessionTicks(t *testing.T) {
	line := func(pid, ppid int, comm string, u int) string {
		return strings.Replace(stat(pid, ppid, u, 0, 0, 0), "(p)", "("+comm+")", 1)
	}
	tab := proctree.Table{}
	for _, l := range []string{
		line(100, 1, "offload", 50),     // monitor
		line(101, 100, "sshd-user", 40), // post-auth process
		line(105, 100, "sshd-preauth", 8),
		line(102, 101, "cat", 7), // session program
		line(103, 102, "tee", 2), // its child
		line(104, 101, "sh", 3),  // another session
		line(200, 1, "sshd", 9),  // OpenSSH listener
		line(201, 200, "sshd-session", 5),
		line(202, 201, "sshd", 4),
		line(203, 202, "bash", 6),
		line(300, 1, "cat", 99), // unrelated
	} {
		s, err := proctree.ParseStat([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		tab[s.PID] = s
	}
	for root, want := range map[int]map[int]uint64{100: {102: 9, 104: 3}, 200: {203: 6}} {
		got := sessionTicks(tab, root)
		if len(got) != len(want) {
			t.Errorf("root %d: %v, want %v", root, got, want)
		}
		for pid, n := range want {
			if got[pid] != n {
				t.Errorf("root %d: %v, want %v", root, got, want)
			}
		}
	}
}

// TestConfigTextDefaultCiphers: with the "default" cipher the servers get
// no Ciphers line (their defaults), otherwise the benchmark's list.
func TestConfigTextDefaultCiphers(t *testing.T) {
	w := &workspace{HostKey: "/k", AuthorizedKeys: "/a", Dir: "/d"}
	for _, spec := range []serverSpec{{Name: srvOffload}, {Name: srvOpenSSH, OpenSSH: true}} {
		if text := configText(spec, w, "127.0.0.1", 2222, []string{cipherDefault, "aes128-ctr"}); strings.Contains(text, "Ciphers") {
			t.Errorf("%s: default ciphers, but:\n%s", spec.Name, text)
		}
		if text := configText(spec, w, "127.0.0.1", 2222, defaultCiphers); !strings.Contains(text, "\nCiphers "+strings.Join(defaultCiphers, ",")+"\n") {
			t.Errorf("%s: no Ciphers line:\n%s", spec.Name, text)
		}
	}
}
