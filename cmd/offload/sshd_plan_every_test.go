//go:build cgo && !nopkcs11

package main

import (
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/providers/cpu"
)

// everyCipher and everyKex are the server's algorithms x/crypto's client
// speaks; the test names no primitive or provider: -T says them.
var (
	everyCipher = []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
		"aes128-ctr", "aes192-ctr", "aes256-ctr"}
	everyKex = []string{"mlkem768x25519-sha256", "curve25519-sha256", "curve25519-sha256@libssh.org",
		"ecdh-sha2-nistp256", "ecdh-sha2-nistp384", "ecdh-sha2-nistp521", "diffie-hellman-group14-sha256"}
)

// TestSshdPlanAgreesForEveryAlgorithm: for every cipher and key exchange
// above, each primitive is served by the provider -T names — the
// monitor's choice in-process; separated, the plan's pre-auth provider
// in the "key exchange done" line and its post-auth provider in the
// post-auth process's "keys resumed" line — with the CPU's defaults, and
// with the CPU's AES masked and ChaCha20 pinned to software.
//
// -T and the daemon share a calibration cache, as they do by default:
// writeConfig's "CalibrationCache none" made each measure afresh, and
// under load the two measurements of close contenders (ChaCha20 by cpu
// and by software) ranked them differently, once in about twenty runs.
func TestSshdPlanAgreesForEveryAlgorithm(t *testing.T) {
	cache := "CalibrationCache=" + t.TempDir()
	for _, v := range []struct{ name, mask, extra string }{
		{"defaults", "", ""},
		{"AES masked, ChaCha20 pinned", "aes,pclmulqdq,vaes,vpclmulqdq", "ProviderMap chacha20=software\n"},
	} {
		for _, sep := range []string{"no", "yes"} {
			t.Run(v.name+"/PrivilegeSeparation="+sep, func(t *testing.T) {
				t.Setenv(cpu.MaskEnv, v.mask)
				cc, ak := clientFor(t, t.TempDir())
				cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nStrictModes no\nPKCS11StateDir none\nAuthorizedKeysFile "+ak+
					"\nCiphers "+strings.Join(everyCipher, ",")+"\nKexAlgorithms "+strings.Join(everyKex, ",")+
					"\nPerSourcePenalties no\nPrivilegeSeparation "+sep+"\n"+v.extra)
				out, _, err := runSshd("-T", "-f", cfg, "-o", cache)
				if err != nil {
					t.Fatal(err)
				}
				checkEveryAlgorithm(t, cfg, cc, out, sep == "yes", "-o", cache)
			})
		}
	}
}

// checkEveryAlgorithm logs in once per cipher and once per key exchange
// to a daemon started with cfg and flags, and compares each connection's
// lines with -T's output.
func checkEveryAlgorithm(t *testing.T, cfg string, cc *ssh.ClientConfig, out string, separated bool, flags ...string) {
	logins := newLogins(t, cfg, separated, flags...)
	for _, c := range everyCipher {
		cc.Config = ssh.Config{Ciphers: []string{c}, KeyExchanges: []string{"curve25519-sha256"}}
		lines := logins.next(cc)
		for prim, prov := range primitivesOf(t, out, "cipher", c) {
			ok := checkServed(t, out, lines, "cipher_in_provider", prim, prov, separated)
			if !checkServed(t, out, lines, "cipher_out_provider", prim, prov, separated) || !ok {
				logins.explain(prim)
			}
		}
	}
	for _, k := range everyKex {
		cc.Config = ssh.Config{Ciphers: []string{"aes128-gcm@openssh.com"}, KeyExchanges: []string{k}}
		lines := logins.next(cc)
		if !strings.Contains(lines["key exchange done"], "kex="+k+" ") {
			t.Errorf("the connection for %s logged %s", k, lines["key exchange done"])
		}
		for prim, prov := range primitivesOf(t, out, "kex", k) {
			if separated {
				prov, _ = planned(t, out, prim)
				prov = strings.TrimSuffix(prov, " in the child")
			}
			if got := servedBy(t, lines["key exchange done"], "kex_provider", prim); got != prov {
				t.Errorf("%s: %s by %s, -T says %s: %s", k, prim, got, prov, lines["key exchange done"])
				logins.explain(prim)
			}
		}
	}
}

// checkServed compares the provider of prim in a connection's lines
// with -T's: the monitor's choice in-process, the plan's separated. It
// reports whether they agree.
func checkServed(t *testing.T, out string, lines map[string]string, key, prim, prov string, separated bool) bool {
	t.Helper()
	if !separated {
		if got := servedBy(t, lines["key exchange done"], key, prim); got != prov {
			t.Errorf("%s: %s by %s, -T says %s", key, prim, got, prov)
			return false
		}
		return true
	}
	pre, post := planned(t, out, prim)
	agree := true
	for msg, want := range map[string]string{"key exchange done": pre, "keys resumed": post} {
		want, where, _ := strings.Cut(want, " in the ")
		got := servedBy(t, lines[msg], key, prim)
		if got != want || (where == "monitor") != strings.Contains(lines[msg], "through the monitor") {
			t.Errorf("%s %s: %s by %s, the plan says %s in the %s: %s", msg, key, prim, got, want, where, lines[msg])
			agree = false
		}
	}
	return agree
}

// primitivesOf reads -T's lines "# KIND NAME: PRIM by PROV ..." into a
// map of each primitive of the algorithm to the monitor's provider.
func primitivesOf(t *testing.T, out, kind, name string) map[string]string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^# ` + kind + ` ` + regexp.QuoteMeta(name) + `: (\S+) by (\S+)`)
	got := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[2]
	}
	if len(got) == 0 {
		t.Fatalf("-T names no primitive of %s %s:\n%s", kind, name, out)
	}
	return got
}

// logins is one daemon and the provenance lines of its connections.
type logins struct {
	t         *testing.T
	addr      string
	buf       *lockedBuffer
	separated bool
	n         int // connections made
	d         *daemon
}

func newLogins(t *testing.T, cfg string, separated bool, flags ...string) *logins {
	o, err := parseSshdFlags(append([]string{"-f", cfg, "-shutdown-timeout", "2s"}, flags...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	buf := &lockedBuffer{}
	d, _, _ := runTestDaemon(t, o, slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	return &logins{t: t, addr: d.listeners[0].Addr().String(), buf: buf, separated: separated, d: d}
}

// explain logs, after a disagreement, the daemon's own account of its
// choice for prim (candidates, measurements, warnings) and its log's
// lines other than the connections' provenance.
func (l *logins) explain(prim string) {
	l.t.Helper()
	l.d.mu.Lock()
	reg := l.d.cur.reg
	l.d.mu.Unlock()
	ex, err := reg.Explain(prim)
	if err != nil {
		l.t.Logf("the daemon cannot explain %s: %v", prim, err)
	} else {
		l.t.Logf("the daemon's choice: %s", ex)
	}
	var other []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if !strings.Contains(line, "key exchange done") && !strings.Contains(line, "keys resumed") {
			other = append(other, line)
		}
	}
	l.t.Logf("the daemon's other lines:\n%s", strings.Join(other, "\n"))
}

// next logs in with cc, runs a command and returns the connection's
// lines by message, waiting until its lines are written.
func (l *logins) next(cc *ssh.ClientConfig) map[string]string {
	t := l.t
	t.Helper()
	c, err := ssh.Dial("tcp", l.addr, cc)
	if err != nil {
		t.Fatalf("%v: %v", cc.Config, err)
	}
	runEcho(t, c)
	c.Close()
	l.n++
	want := []string{"key exchange done"}
	if l.separated {
		want = append(want, "keys resumed")
	}
	got := map[string]string{}
	if !testenv.WaitUntil(t, func() bool {
		for _, msg := range want {
			all := regexp.MustCompile(`.*msg="transport: `+msg+`.*`).FindAllString(l.buf.String(), -1)
			if len(all) >= l.n {
				got[msg] = all[l.n-1]
			}
		}
		return len(got) == len(want)
	}) {
		t.Fatalf("connection %d: lines %v of %v:\n%s", l.n, got, want, l.buf.String())
	}
	return got
}
