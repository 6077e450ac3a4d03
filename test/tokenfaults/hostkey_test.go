package tokenfaults

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/test/hostile/harness"
)

const hostSize = 8 << 20

// hostKey makes the ECDSA P-256 host key the tests store in tokens, and
// its SSH public key for the client's host key check.
func hostKey(t *testing.T) (*ecdsa.PrivateKey, ssh.PublicKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, pub
}

// TestHostKeyTokenRemovedNoFailover: with the only host key in a token
// and no failover, deleting the token makes new handshakes fail closed
// while an established session keeps transferring; restoring the token
// (an administrator re-creating it and importing the same key) makes
// handshakes succeed again without restarting the server.
func TestHostKeyTokenRemovedNoFailover(t *testing.T) {
	requirePKCS11(t)
	tok := softhsmtest.NewToken(t, "tf-host")
	key, pub := hostKey(t)
	tok.Import(t, key, "host")
	lb, log := serverLog(t)
	p, err := pkcs11.OpenURI(tok.TokenURI(), pkcs11.Config{HealthInterval: healthInterval, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, p, log, nil, provider.Policy{})
	signer, err := reg.Signer(context.Background(), tok.URI("host"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, reg, []crypto.Signer{signer}, log)
	cfg := clientConfig(srv, pub, "")
	if got := roundTrip(t, srv.Addr, cfg, 1<<20); got != "completed" {
		t.Fatalf("before the removal: %s", got)
	}
	gate := make(chan struct{})
	established := startTransfer(srv.Addr, cfg, hostSize, 1, gate)
	<-established.half

	tok.Delete(t)
	waitHealth(t, p, 0, false)
	refused := failClosed(t, lb, srv, cfg, tok.Label)
	close(gate)
	kept := established.wait(t)
	if kept != "completed" {
		t.Errorf("established session after the host key's token went away: %s, want it to keep going", kept)
	}

	tok.Recreate(t)
	tok.Import(t, key, "host")
	waitHealth(t, p, 0, true)
	if got := roundTrip(t, srv.Addr, cfg, 1<<20); got != "completed" {
		t.Fatalf("new connection after the token and key came back: %s", got)
	}
	t.Logf("host key in token, no failover, token deleted: new handshake refused (%s); established session %s; after restore a new handshake with the same host key completed (%d recoveries, no restart)",
		refused, kept, p.Health()[0].Recoveries)
}

// failClosed checks that a handshake with the token gone fails and that
// the server log names the token and says there is no fallback.
func failClosed(t *testing.T, lb *harness.LogBuffer, srv *harness.Server, cfg *ssh.ClientConfig, label string) string {
	t.Helper()
	before := lb.String()
	c, err := ssh.Dial("tcp", srv.Addr, cfg)
	if err == nil {
		c.Close()
		t.Fatalf("a handshake succeeded with the host key's token gone")
	}
	// The server may log the refusal just after the client sees it.
	var logged, why string
	testenv.WaitUntil(t, func() bool {
		logged = strings.TrimPrefix(lb.String(), before)
		why = refusalLine(logged, label)
		return why != ""
	})
	if why == "" {
		t.Errorf("the server log does not name the token %q and the missing fallback after a refused handshake:\n%s", label, logged)
	}
	return "client: " + err.Error() + "; server: " + why
}

// refusalLine returns the first non-debug log record naming the token and
// saying there is no fallback, from its message on.
func refusalLine(logged, label string) string {
	for _, line := range strings.Split(logged, "\n") {
		if strings.Contains(line, "level=DEBUG") {
			continue
		}
		if strings.Contains(line, label) && strings.Contains(line, "no software fallback") {
			_, why, _ := strings.Cut(line, "msg=")
			return why
		}
	}
	return ""
}

// TestHostKeyFailover: the same host key on a second token, configured as
// the first's failover; deleting the first keeps handshakes succeeding
// with the same host key.
func TestHostKeyFailover(t *testing.T) {
	requirePKCS11(t)
	fs := startFailoverServer(t, "tf", nil)
	prim, back, key, lb, p, srv, cfg := fs.prim, fs.back, fs.key, fs.lb, fs.p, fs.srv, fs.cfg
	gate := make(chan struct{})
	established := startTransfer(srv.Addr, cfg, hostSize, 2, gate)
	<-established.half

	prim.Delete(t)
	waitHealth(t, p, 0, false)
	moved := logCount(lb, "signing on the failover token")
	if got := roundTrip(t, srv.Addr, cfg, 1<<20); got != "completed" {
		t.Fatalf("new connection with the primary token gone: %s, want the failover token to sign", got)
	}
	moved = logCount(lb, "signing on the failover token") - moved
	if moved == 0 {
		t.Errorf("the server log does not say the host key signed on the failover token")
	}
	close(gate)
	kept := established.wait(t)
	if kept != "completed" {
		t.Errorf("established session: %s", kept)
	}
	h := p.Health()

	prim.Recreate(t)
	prim.Import(t, key, "host")
	waitHealth(t, p, 0, true)
	if got := roundTrip(t, srv.Addr, cfg, 1<<20); got != "completed" {
		t.Fatalf("new connection after the primary token came back: %s", got)
	}
	t.Logf("host key with failover, primary deleted: new handshake completed with the same host key (signed on %s, %d failover log line(s)); established session %s; health during the outage primary up=%v backup up=%v; primary restored: handshakes still complete (%d recoveries)",
		back.Label, moved, kept, h[0].Up, h[1].Up, p.Health()[0].Recoveries)
}
