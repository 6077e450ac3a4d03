package audit

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/transport"
	"github.com/offload/offload/test/hostile/harness"
)

const strictKex = "kex-strict-s-v00@openssh.com"

// finding is one of the scanner's verdicts: its level, the algorithm
// it is about (the last "(kind) name" line above it) and its note.
type finding struct {
	level string // fail, warn, cve
	alg   string // "(kex) sntrup761x25519-sha512@openssh.com"
	note  string // "using experimental algorithm"
	line  string
}

// key names a finding independently of column alignment.
func (f finding) key() string { return f.level + " " + f.alg + ": " + f.note }

// findings collects the [fail] and [warn] notes of ssh-audit's text
// output (-n), and the CVE lines; warnings that only say the scanner does
// not know an algorithm are returned apart. Scanners that know Terrapin
// (3.1+) report it as a warning on chacha20-poly1305 and the EtM MACs and
// as a CVE line when strict kex is missing, so it is caught here too.
func findings(out string) (bad []finding, unknown []string) {
	alg := ""
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "(") {
			if kind, rest, ok := strings.Cut(l, ")"); ok {
				name, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
				alg = kind + ") " + name
			}
		}
		note := l
		if _, n, ok := strings.Cut(l, "] "); ok {
			note = n
		}
		switch {
		case strings.Contains(l, "[fail]"):
			bad = append(bad, finding{"fail", alg, note, l})
		case strings.Contains(l, "[warn]") && strings.Contains(l, "unknown algorithm"):
			unknown = append(unknown, l)
		case strings.Contains(l, "[warn]"):
			bad = append(bad, finding{"warn", alg, note, l})
		case strings.HasPrefix(l, "(cve)"):
			bad = append(bad, finding{"cve", alg, note, l})
		}
	}
	return bad, unknown
}

// report is the part of ssh-audit's JSON output (-j) the test reads;
// entries of "kex" and "key" are objects with "algorithm" in every
// version, "enc" and "mac" are plain names in old versions and objects
// in newer ones.
type report struct {
	Banner struct {
		Raw string `json:"raw"`
	} `json:"banner"`
	Kex []struct {
		Algorithm string `json:"algorithm"`
	} `json:"kex"`
	Key []struct {
		Algorithm string `json:"algorithm"`
	} `json:"key"`
	Enc []json.RawMessage `json:"enc"`
	MAC []json.RawMessage `json:"mac"`
}

func names(raw []json.RawMessage) []string {
	var out []string
	for _, r := range raw {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, s)
			continue
		}
		var o struct {
			Algorithm string `json:"algorithm"`
		}
		if json.Unmarshal(r, &o) == nil {
			out = append(out, o.Algorithm)
		}
	}
	return out
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := testenv.Context(t)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	// ssh-audit exits 1-3 for warnings and failures; the output decides.
	if ctx.Err() != nil {
		t.Fatalf("ssh-audit %v timed out: %v\n%s", args, err, out)
	}
	t.Logf("ssh-audit %s: %v", strings.Join(args, " "), err)
	return string(out)
}

// TestSSHAudit scans a server with the zero sshd.Config: no failure, no
// CVE, and no warning that OpenSSH's sshd on its own defaults does not
// draw too (scanned beside it when /usr/sbin/sshd can run here; the
// warnings allowed are explained in docs/security.md).
func TestSSHAudit(t *testing.T) {
	bin := testenv.LookPath(t, "ssh-audit", "apt-get install ssh-audit")
	srv := harness.Start(t, func(c *sshd.Config) { *c = sshd.Config{Logger: c.Logger} })
	text := scan(t, bin, srv.Addr)
	bad, unknown := findings(text)
	allowed := openSSHFindings(t, bin)
	for _, f := range bad {
		switch _, ok := allowed[f.key()]; {
		case f.level == "warn" && ok:
			t.Logf("ssh-audit warns as it does on OpenSSH's defaults: %s", f.key())
		default:
			t.Errorf("ssh-audit %s: %s", f.level, f.line)
		}
	}
	for _, u := range unknown {
		t.Logf("scanner too old for: %s", u)
	}
	if !strings.Contains(text, strictKex) {
		t.Errorf("ssh-audit does not see %s: vulnerable to Terrapin", strictKex)
	}
	port := srv.Addr[strings.LastIndex(srv.Addr, ":")+1:]
	checkJSON(t, srv, run(t, bin, "-j", "-t", "20", "-p", port, "127.0.0.1"))
	if t.Failed() {
		t.Logf("ssh-audit said:\n%s", text)
	}
}

// TestSSHAuditHardened: CryptoProfile hardened draws no warning at all
// (notes that the scanner does not know an algorithm aside).
func TestSSHAuditHardened(t *testing.T) {
	bin := testenv.LookPath(t, "ssh-audit", "apt-get install ssh-audit")
	srv := harness.Start(t, func(c *sshd.Config) {
		*c = sshd.Config{Logger: c.Logger, CryptoProfile: transport.ProfileHardened}
	})
	text := scan(t, bin, srv.Addr)
	bad, _ := findings(text)
	for _, f := range bad {
		t.Errorf("ssh-audit %s: %s", f.level, f.line)
	}
	if t.Failed() {
		t.Logf("ssh-audit said:\n%s", text)
	}
}

func scan(t *testing.T, bin, addr string) string {
	t.Helper()
	port := addr[strings.LastIndex(addr, ":")+1:]
	text := run(t, bin, "-n", "-t", "20", "-p", port, "127.0.0.1")
	if !strings.Contains(text, "(kex)") {
		t.Fatalf("ssh-audit did not list key exchanges; output:\n%s", text)
	}
	return text
}

// openSSHDefaultWarnings are the warnings ssh-audit 2.5 gives OpenSSH's
// sshd on its defaults with an Ed25519 host key, used when OpenSSH's sshd
// cannot be run beside the test (not root): OpenSSH 9.2 and 10 offer
// sntrup761x25519-sha512@openssh.com and the encrypt-and-MAC
// hmac-sha2-256/512 by default.
var openSSHDefaultWarnings = []string{
	"warn (kex) sntrup761x25519-sha512@openssh.com: using experimental algorithm",
	"warn (mac) hmac-sha2-256: using encrypt-and-MAC mode",
	"warn (mac) hmac-sha2-512: using encrypt-and-MAC mode",
}

// openSSHFindings scans OpenSSH's sshd started on its defaults (an
// Ed25519 host key, 127.0.0.1, a free port) and returns its findings;
// without root or sshd it returns openSSHDefaultWarnings.
func openSSHFindings(t *testing.T, bin string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	sshdBin, err := exec.LookPath("/usr/sbin/sshd")
	if err != nil || os.Geteuid() != 0 {
		t.Logf("OpenSSH's sshd cannot run here (%v, euid %d): using the recorded list", err, os.Geteuid())
		for _, k := range openSSHDefaultWarnings {
			out[k] = true
		}
		return out
	}
	addr := startOpenSSH(t, sshdBin)
	bad, _ := findings(scan(t, bin, addr))
	for _, f := range bad {
		out[f.key()] = true
		t.Logf("OpenSSH's sshd on defaults: %s", f.key())
	}
	return out
}

func startOpenSSH(t *testing.T, sshdBin string) string {
	t.Helper()
	dir := t.TempDir()
	hk := filepath.Join(dir, "hk")
	testenv.Run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hk)
	port := testenv.FreePort(t)
	addr := net.JoinHostPort("127.0.0.1", port)
	os.MkdirAll("/run/sshd", 0o755) // OpenSSH's privilege separation directory
	cfg := filepath.Join(dir, "sshd_config")
	os.WriteFile(cfg, []byte("ListenAddress 127.0.0.1\nPort "+port+"\nHostKey "+hk+"\nPidFile none\nUsePAM no\n"), 0o600)
	cmd := exec.Command(sshdBin, "-D", "-e", "-f", cfg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if testenv.WaitUntil(t, func() bool { return testenv.Listening(addr) }) {
		return addr
	}
	t.Fatalf("OpenSSH's sshd did not listen on %s", addr)
	return ""
}

// checkJSON compares the scanner's view of the offer with the server's.
func checkJSON(t *testing.T, srv *harness.Server, out string) {
	t.Helper()
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Errorf("ssh-audit -j output is not JSON: %v\n%s", err, out)
		return
	}
	kex, hostKeys, ciphers, macs := srv.Srv.Transport().Offer()
	var seenKex []string
	for _, k := range r.Kex {
		seenKex = append(seenKex, k.Algorithm)
	}
	if !slices.Contains(seenKex, strictKex) {
		t.Errorf("scanner's kex list lacks %s: %v", strictKex, seenKex)
	}
	seenKex = slices.DeleteFunc(seenKex, func(s string) bool { return s == strictKex })
	compare(t, "kex", seenKex, kex)
	var seenKeys []string
	for _, k := range r.Key {
		seenKeys = append(seenKeys, k.Algorithm)
	}
	compare(t, "host key", seenKeys, hostKeys)
	compare(t, "cipher", names(r.Enc), ciphers)
	compare(t, "MAC", names(r.MAC), macs)
	for _, k := range seenKex {
		if strings.Contains(k, "nistp") {
			t.Errorf("NIST curve %s offered by default", k)
		}
	}
}

func compare(t *testing.T, what string, seen, want []string) {
	t.Helper()
	if !slices.Equal(seen, want) {
		t.Errorf("%s offer seen by ssh-audit %v, server offers %v", what, seen, want)
	}
}

// TestFindings checks the parser on lines from ssh-audit 2.5 and 3.x.
func TestFindings(t *testing.T) {
	out := strings.Join([]string{
		"(kex) mlkem768x25519-sha256          -- [warn] unknown algorithm",
		"(kex) curve25519-sha256              -- [info] available since OpenSSH 7.4",
		"(kex) ecdh-sha2-nistp256             -- [fail] using weak elliptic curves",
		"(mac) hmac-sha1                      -- [warn] using weak hashing algorithm",
		"                                     `- [warn] using encrypt-and-MAC mode",
		"(cve) CVE-2023-48795                 -- (CVSSv2: 5.9) Terrapin",
		"(enc) chacha20-poly1305@openssh.com  -- [warn] vulnerable to the Terrapin attack (CVE-2023-48795), allowing message prefix truncation",
		"(kex) kex-strict-s-v00@openssh.com   -- [info] pseudo-algorithm that denotes the peer supports a stricter key exchange method as a counter-measure to the Terrapin attack (CVE-2023-48795)",
	}, "\n")
	bad, unknown := findings(out)
	if len(unknown) != 1 {
		t.Errorf("unknown = %v", unknown)
	}
	var levels []string
	for _, f := range bad {
		levels = append(levels, f.level)
	}
	want := []string{"fail", "warn", "warn", "cve", "warn"}
	if !slices.Equal(levels, want) {
		t.Errorf("levels = %v, want %v", levels, want)
	}
	if k := bad[2].key(); k != "warn (mac) hmac-sha1: using encrypt-and-MAC mode" {
		t.Errorf("continuation line attributed as %q", k)
	}
}
