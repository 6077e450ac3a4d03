//go:build cgo && !nopkcs11

package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/providers/pkcs11"
)

// TestSshdPredictionMatchesConnection: what -T says serves the cipher,
// the key exchange and the host key is what a real connection's log line
// says served them, with the token pinned for AES-GCM and ECDH, in
// process and separated. Separated, the pre-auth worker that carries the
// connection until the login has no token: -T says so on the lines that
// follow the monitor's choice.
func TestSshdPredictionMatchesConnection(t *testing.T) {
	tok := softhsmtest.NewToken(t, "predict")
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Generate(context.Background(), tok.URI("host"), pkcs11.ECDSAP256); err != nil {
		t.Fatal(err)
	}
	p.Close()
	for _, sep := range []string{"no", "yes"} {
		t.Run("PrivilegeSeparation="+sep, func(t *testing.T) {
			cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nPKCS11StateDir none\nHostKey "+tok.URI("host")+
				"\nProviderMap aes128-gcm=pkcs11,ecdh-p256=pkcs11\nKexAlgorithms ecdh-sha2-nistp256,curve25519-sha256"+
				"\nPrivilegeSeparation "+sep+"\n")
			out, _, err := runSshd("-T", "-f", cfg)
			if err != nil {
				t.Fatal(err)
			}
			who := "monitor"
			if sep == "yes" {
				who = "pre-auth workers" // the connection below never logs in
			}
			want := map[string]string{
				"aes128-gcm": predicted(t, out, "cipher aes128-gcm@openssh.com", "aes128-gcm", who),
				"ecdh-p256":  predicted(t, out, "kex ecdh-sha2-nistp256", "ecdh-p256", who),
			}
			if !strings.Contains(out, "# hostkey "+tok.URI("host")) || !regexp.MustCompile(`# hostkey pkcs11:token=predict;object=host\S*: ecdsa-sha2-nistp256 \S+, held by pkcs11\n`).MatchString(out) {
				t.Fatalf("-T does not put the host key on the token:\n%s", out)
			}
			line := connectAndLog(t, cfg)
			got := map[string]string{
				"aes128-gcm": servedBy(t, line, "cipher_out_provider", "aes128-gcm"),
				"ecdh-p256":  servedBy(t, line, "kex_provider", "ecdh-p256"),
			}
			for alg := range want {
				if got[alg] != want[alg] {
					t.Errorf("%s: -T predicts %s, the connection used %s\n-T:\n%s\nlog: %s", alg, want[alg], got[alg], out, line)
				}
			}
			if hk := servedBy(t, line, "host_key_provider", "ecdsa-p256-sha256"); hk != "pkcs11" {
				t.Errorf("host key served by %s, -T says pkcs11; log: %s", hk, line)
			}
		})
	}
}

// predicted reads from -T output the provider of prim on the line of
// algo, or on the following "in the <who>" line when there is one.
func predicted(t *testing.T, out, algo, prim, who string) string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "# "+algo+": "+prim+" by ") {
			continue
		}
		prov := strings.Fields(strings.TrimPrefix(l, "# "+algo+": "+prim+" by "))[0]
		for _, next := range lines[i+1:] {
			if !strings.HasPrefix(next, "#   ") {
				break
			}
			if rest, ok := strings.CutPrefix(next, "#   in the "+who); ok {
				_, after, _ := strings.Cut(rest, ": "+prim+" by ")
				prov = strings.Fields(after)[0]
			}
		}
		return prov
	}
	t.Fatalf("-T has no line for %s %s:\n%s", algo, prim, out)
	return ""
}

// servedBy reads the provider of prim from a log attribute such as
// cipher_out_provider="aes128-gcm by pkcs11 (hardware, ...)".
func servedBy(t *testing.T, line, key, prim string) string {
	t.Helper()
	m := regexp.MustCompile(key + `="[^"]*?` + regexp.QuoteMeta(prim) + ` by ([^ ";]+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no %s for %s in %s", key, prim, line)
	}
	return m[1]
}

// connectAndLog starts the daemon of cfg, makes one connection that
// completes its key exchange with aes128-gcm and ecdh-sha2-nistp256 and
// returns the server's "key exchange done" log line.
func connectAndLog(t *testing.T, cfg string) string {
	t.Helper()
	o, err := parseSshdFlags([]string{"-f", cfg, "-shutdown-timeout", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := startDaemon(ctx, o, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); d.loop(ctx) }()
	defer func() { cancel(); <-done }()
	addr := d.listeners[0].Addr().String()
	ccfg := &ssh.ClientConfig{User: "nobody", Auth: []ssh.AuthMethod{ssh.Password("x")},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), HostKeyAlgorithms: []string{ssh.KeyAlgoECDSA256},
		Timeout: 10 * time.Second,
		Config:  ssh.Config{Ciphers: []string{"aes128-gcm@openssh.com"}, KeyExchanges: []string{"ecdh-sha2-nistp256"}}}
	c, err := ssh.Dial("tcp", addr, ccfg)
	if err == nil {
		c.Close()
	}
	var line string
	if !testenv.WaitUntil(t, func() bool {
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.Contains(l, `msg="transport: key exchange done`) {
				line = l
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no key exchange logged (client: %v):\n%s", err, buf.String())
	}
	return line
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSshdTokenAttachesLater: a server started while its token is absent
// (a failed accelerator card) serves with the CPU and software providers;
// when the token appears, the health probe attaches it and new
// connections get the pinned AES-GCM from it, without a restart.
func TestSshdTokenAttachesLater(t *testing.T) {
	tok := softhsmtest.NewToken(t, "latecard")
	tok.Delete(t)
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nPKCS11StateDir none\nPKCS11Token "+tok.TokenURI()+
		"\nProviderMap aes128-gcm=pkcs11\nKexAlgorithms curve25519-sha256\nPrivilegeSeparation no\nPerSourcePenalties no\n")
	o, err := parseSshdFlags([]string{"-f", cfg, "-shutdown-timeout", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	d, err := startDaemon(ctx, o, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		cancel()
		t.Fatalf("start with the token absent: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); d.loop(ctx) }()
	defer func() { cancel(); <-done }()
	addr := d.listeners[0].Addr().String()
	ccfg := &ssh.ClientConfig{User: "nobody", Auth: []ssh.AuthMethod{ssh.Password("x")},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second,
		Config: ssh.Config{Ciphers: []string{"aes128-gcm@openssh.com"}, KeyExchanges: []string{"curve25519-sha256"}}}
	cipherOf := func() string {
		n := strings.Count(buf.String(), `msg="transport: key exchange done`)
		if c, err := ssh.Dial("tcp", addr, ccfg); err == nil {
			c.Close()
		}
		var lines []string
		if !testenv.WaitUntil(t, func() bool {
			lines = regexp.MustCompile(`.*msg="transport: key exchange done.*`).FindAllString(buf.String(), -1)
			return len(lines) > n
		}) {
			t.Fatalf("no key exchange logged:\n%s", buf.String())
		}
		return servedBy(t, lines[n], "cipher_out_provider", "aes128-gcm")
	}
	if got := cipherOf(); got == "pkcs11" {
		t.Fatalf("aes128-gcm served by %s with the token absent", got)
	}
	if !strings.Contains(buf.String(), "PKCS #11 token not attached; starting without it") {
		t.Errorf("no warning about the absent token:\n%s", buf.String())
	}
	tok.Recreate(t)
	for deadline := testenv.StartupDeadline(t); ; time.Sleep(200 * time.Millisecond) {
		got := cipherOf()
		if got == "pkcs11" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token appeared but aes128-gcm is still served by %s", got)
		}
	}
}
