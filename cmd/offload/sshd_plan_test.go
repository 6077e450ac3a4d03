//go:build cgo && !nopkcs11

package main

import (
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/providers/cpu"
)

// TestSshdPlanAgreesWithConnections: what -T prints (the monitor's
// choice and the plan the children construct from) and the provenance
// lines of a connection that logs in and runs a command agree, in both
// process modes, with AES-GCM pinned to a token and the CPU's AES
// masked. Separated, the pre-auth worker seals in software, as the plan
// says (the mask is the monitor's: its children follow it), and after
// the hand-over the post-auth process says it seals on the token through
// the monitor ("keys resumed"). Each line says from which packet
// sequence numbers its providers apply.
func TestSshdPlanAgreesWithConnections(t *testing.T) {
	t.Setenv(cpu.MaskEnv, "aes,pclmulqdq,vaes,vpclmulqdq")
	tok, _ := tokenHostKey(t, "plan")
	cc, ak := clientFor(t, t.TempDir())
	cc.Config = ssh.Config{Ciphers: []string{"aes128-gcm@openssh.com"}, KeyExchanges: []string{"curve25519-sha256"}}
	for _, sep := range []string{"no", "yes"} {
		t.Run("PrivilegeSeparation="+sep, func(t *testing.T) {
			cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nStrictModes no\nPKCS11StateDir none\nAuthorizedKeysFile "+ak+
				"\nHostKey "+tok.URI("hostkey")+"\nProviderMap aes128-gcm=pkcs11,x25519=software\nCiphers aes128-gcm@openssh.com"+
				"\nKexAlgorithms curve25519-sha256\nPerSourcePenalties no\nPrivilegeSeparation "+sep+"\n")
			out, _, err := runSshd("-T", "-f", cfg)
			if err != nil {
				t.Fatal(err)
			}
			lines := loginAndLog(t, cfg, cc, sep == "yes")
			if monitor := predicted(t, out, "cipher aes128-gcm@openssh.com", "aes128-gcm", "monitor"); monitor != "pkcs11" {
				t.Fatalf("-T: the monitor's AES-GCM is %s, want the pinned pkcs11:\n%s", monitor, out)
			}
			if sep == "no" {
				checkLine(t, lines["key exchange done"], "pkcs11", "")
				return
			}
			pre, post := planned(t, out, "aes128-gcm")
			if pre != "software in the child" || post != "pkcs11 in the monitor" {
				t.Errorf("plan: aes128-gcm pre-auth %q, post-auth %q; want software in the child (CPU AES masked), pkcs11 in the monitor\n%s", pre, post, out)
			}
			if p := predicted(t, out, "cipher aes128-gcm@openssh.com", "aes128-gcm", "pre-auth workers"); p+" in the child" != pre {
				t.Errorf("-T's pre-auth line says %s, its plan %s", p, pre)
			}
			if kpre, _ := planned(t, out, "x25519"); kpre != "software in the child" {
				t.Errorf("plan: x25519 %q, want the pinned software", kpre)
			}
			checkLine(t, lines["key exchange done"], "software", "")
			checkLine(t, lines["keys resumed"], "pkcs11", "through the monitor")
		})
	}
}

// planned reads the plan line of prim from -T output: who serves it in
// the pre-auth and post-auth stages, and where.
func planned(t *testing.T, out, prim string) (pre, post string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^# plan ` + regexp.QuoteMeta(prim) + `: pre-auth (.+), post-auth (.+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("-T has no plan line for %s:\n%s", prim, out)
	}
	return m[1], m[2]
}

// checkLine checks that a provenance line names prov (with detail) for
// AES-GCM in both directions, the key exchange's provider, the
// connection and the sequence numbers from which they apply.
func checkLine(t *testing.T, line, prov, detail string) {
	t.Helper()
	for _, key := range []string{"cipher_in_provider", "cipher_out_provider"} {
		if got := servedBy(t, line, key, "aes128-gcm"); got != prov {
			t.Errorf("%s is %s, want %s: %s", key, got, prov, line)
		}
	}
	if detail != "" && !strings.Contains(line, detail) {
		t.Errorf("line lacks %q: %s", detail, line)
	}
	if strings.Contains(line, "key exchange done") && servedBy(t, line, "kex_provider", "x25519") != "software" {
		t.Errorf("kex_provider is not the pinned software: %s", line)
	}
	for _, key := range []string{"conn", "seq_in", "seq_out"} {
		m := regexp.MustCompile(`\b` + key + `=(\d+)`).FindStringSubmatch(line)
		if m == nil {
			t.Errorf("no %s in %s", key, line)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); strings.Contains(line, "keys resumed") && key != "conn" && n == 0 {
			t.Errorf("resumed at %s 0, after the authentication's packets: %s", key, line)
		}
	}
}

// loginAndLog starts the daemon of cfg, logs in with cc, runs a command,
// and returns the provenance lines of the connection by message: "key
// exchange done" (the first exchange) and, separated, "keys resumed".
func loginAndLog(t *testing.T, cfg string, cc *ssh.ClientConfig, separated bool) map[string]string {
	t.Helper()
	o, err := parseSshdFlags([]string{"-f", cfg, "-shutdown-timeout", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	d, _, _ := runTestDaemon(t, o, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	c, err := ssh.Dial("tcp", d.listeners[0].Addr().String(), cc)
	if err != nil {
		t.Fatal(err)
	}
	runEcho(t, c)
	c.Close()
	want := []string{"key exchange done"}
	if separated {
		want = append(want, "keys resumed")
	}
	got := map[string]string{}
	if !testenv.WaitUntil(t, func() bool {
		for _, msg := range want {
			if l := regexp.MustCompile(`.*msg="transport: ` + msg + `.*`).FindString(buf.String()); l != "" {
				got[msg] = l
			}
		}
		return len(got) == len(want)
	}) {
		t.Fatalf("provenance lines %v of %v:\n%s", got, want, buf.String())
	}
	return got
}
