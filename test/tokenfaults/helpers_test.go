package tokenfaults

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/internal/softhsmtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/pkcs11"
	"github.com/offload/offload/providers/pkcs11/uri"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/test/hostile/harness"
)

// Bounds that keep a broken server from hanging the test.
const (
	transferTimeout = 30 * time.Second
	healthTimeout   = 10 * time.Second
	healthInterval  = 50 * time.Millisecond
)

func requirePKCS11(t *testing.T) {
	t.Helper()
	if !pkcs11.Available {
		testenv.Missing(t, "PKCS #11 support (built without cgo)", "build with CGO_ENABLED=1")
	}
}

// serverLog is one log shared by the server, the registry and the
// provider, printed when the test fails.
func serverLog(t *testing.T) (*harness.LogBuffer, *slog.Logger) {
	t.Helper()
	lb := &harness.LogBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", lb.String())
		}
	})
	return lb, slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newRegistry registers the CPU, PKCS #11 and software providers and
// closes them when the test ends (after the server, which is started later).
func newRegistry(t *testing.T, p *pkcs11.Provider, log *slog.Logger, m *provider.Metrics, pol provider.Policy) *provider.Registry {
	t.Helper()
	reg := provider.New(provider.Config{Logger: log, Metrics: m, Policy: pol})
	t.Cleanup(func() { reg.Close() })
	for _, pr := range []provider.Provider{cpu.New(cpu.Detect()), p, software.New()} {
		if err := reg.Register(pr); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// startServer runs a harness server on 127.0.0.1 with reg, hostKeys (nil:
// an ephemeral key) and log.
func startServer(t *testing.T, reg *provider.Registry, hostKeys []crypto.Signer, log *slog.Logger) *harness.Server {
	t.Helper()
	return harness.Start(t, func(c *sshd.Config) {
		c.Registry = reg
		c.HostKeys = hostKeys
		c.Logger = log
	})
}

// waitHealth waits until token i of p is up (or down).
func waitHealth(t *testing.T, p *pkcs11.Provider, i int, up bool) {
	t.Helper()
	deadline := time.Now().Add(healthTimeout)
	for p.Health()[i].Up != up {
		if time.Now().After(deadline) {
			t.Fatalf("token %d did not become up=%v in %v: %+v", i, up, healthTimeout, p.Health()[i])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// clientConfig logs in to srv, checking the host key against hostKey
// (nil: any) and offering only cipher when it is not empty.
func clientConfig(srv *harness.Server, hostKey ssh.PublicKey, cipher string) *ssh.ClientConfig {
	cfg := srv.ClientConfig()
	if hostKey != nil {
		cfg.HostKeyCallback = ssh.FixedHostKey(hostKey)
		cfg.HostKeyAlgorithms = []string{hostKey.Type()}
	}
	if cipher != "" {
		cfg.Ciphers = []string{cipher}
	}
	return cfg
}

// transfer is one connection sending size pseudo-random bytes through
// `cat` and hashing what comes back. The writer stops at half way until
// gate is closed, so the test can fail the token in the middle.
type transfer struct {
	size   int
	gate   <-chan struct{}
	half   chan struct{} // closed once half is written (or the transfer ended early)
	done   chan struct{}
	err    error
	hung   atomic.Bool
	sent   hash.Hash
	recv   hash.Hash
	nRecv  atomic.Int64
	client *ssh.Client
}

// startTransfer dials addr and starts a transfer; gate nil means no pause.
func startTransfer(addr string, cfg *ssh.ClientConfig, size int, seed uint64, gate <-chan struct{}) *transfer {
	tr := &transfer{size: size, gate: gate, half: make(chan struct{}), done: make(chan struct{}),
		sent: sha256.New(), recv: sha256.New()}
	go func() {
		defer close(tr.done)
		tr.err = tr.run(addr, cfg, seed)
	}()
	return tr
}

func (tr *transfer) run(addr string, cfg *ssh.ClientConfig, seed uint64) error {
	halfOnce := closeOnce(tr.half)
	defer halfOnce()
	c, err := ssh.Dial("tcp", addr, cfg)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer c.Close()
	timer := time.AfterFunc(transferTimeout, func() { tr.hung.Store(true); c.Close() })
	defer timer.Stop()
	sess, err := harness.NewSession(c)
	if err != nil {
		return fmt.Errorf("session: %w", err)
	}
	stdin, _ := sess.StdinPipe()
	stdout, _ := sess.StdoutPipe()
	if err := sess.Start("cat"); err != nil {
		return fmt.Errorf("start cat: %w", err)
	}
	werr := make(chan error, 1)
	go func() { werr <- tr.write(stdin, seed, halfOnce) }()
	_, rerr := io.Copy(io.MultiWriter(tr.recv, counter{&tr.nRecv}), stdout)
	return errors.Join(<-werr, rerr, sess.Wait())
}

func (tr *transfer) write(w io.WriteCloser, seed uint64, half func()) error {
	rng := rand.New(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}))
	buf := make([]byte, 32<<10)
	for n := 0; n < tr.size; n += len(buf) {
		if n == tr.size/2 {
			half()
			if tr.gate != nil {
				<-tr.gate
			}
		}
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		tr.sent.Write(buf)
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	return w.Close()
}

// wait returns the outcome: "completed" (every byte back, checksums
// equal) or "ended: <error>". A hang or wrong data fails the test.
func (tr *transfer) wait(t *testing.T) string {
	t.Helper()
	select {
	case <-tr.done:
	case <-time.After(transferTimeout + 5*time.Second):
		t.Fatalf("transfer did not end within %v", transferTimeout)
	}
	switch {
	case tr.hung.Load():
		t.Errorf("transfer hung (%d of %d bytes back): %v", tr.nRecv.Load(), tr.size, tr.err)
		return "hung"
	case tr.err != nil:
		return "ended: " + tr.err.Error()
	case tr.nRecv.Load() != int64(tr.size) || !bytes.Equal(tr.sent.Sum(nil), tr.recv.Sum(nil)):
		t.Errorf("transfer ended without an error but %d of %d bytes came back with checksum %x, want %x",
			tr.nRecv.Load(), tr.size, tr.recv.Sum(nil), tr.sent.Sum(nil))
		return "wrong data"
	}
	return "completed"
}

// roundTrip runs one ungated transfer of size bytes and returns its outcome.
func roundTrip(t *testing.T, addr string, cfg *ssh.ClientConfig, size int) string {
	t.Helper()
	return startTransfer(addr, cfg, size, 99, nil).wait(t)
}

type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

func closeOnce(ch chan struct{}) func() {
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			close(ch)
		}
	}
}

// tokenOps sums the Seal and Open operations provider name made for alg.
func tokenOps(m *provider.Metrics, name, alg string) uint64 {
	var n uint64
	for _, s := range m.Snapshot() {
		if s.Provider == name && s.Algorithm == alg && (s.Op == provider.OpSeal.String() || s.Op == provider.OpOpen.String()) {
			n += s.Ops
		}
	}
	return n
}

// logCount counts lines of the log containing s.
func logCount(lb *harness.LogBuffer, s string) int {
	return bytes.Count([]byte(lb.String()), []byte(s))
}

// waitLog waits until the startup deadline for more than n log lines
// containing s.
func waitLog(t testing.TB, lb *harness.LogBuffer, s string, n int) {
	testenv.WaitUntil(t, func() bool { return logCount(lb, s) > n })
}

// failoverServer is a server whose host key lives in two tokens holding
// the same key, the second named as the first's failover.
type failoverServer struct {
	prim, back *softhsmtest.Token
	key        *ecdsa.PrivateKey
	lb         *harness.LogBuffer
	p          *pkcs11.Provider
	srv        *harness.Server
	cfg        *ssh.ClientConfig
}

// startFailoverServer makes the two tokens (labels prefix-prim and
// prefix-back) and serves with the primary's key; f may be nil.
func startFailoverServer(t *testing.T, prefix string, f *pkcs11faults.Injector) *failoverServer {
	t.Helper()
	fs := &failoverServer{prim: softhsmtest.NewToken(t, prefix+"-prim"), back: softhsmtest.NewToken(t, prefix+"-back")}
	var pub ssh.PublicKey
	fs.key, pub = hostKey(t)
	fs.prim.Import(t, fs.key, "host")
	fs.back.Import(t, fs.key, "host")
	var log *slog.Logger
	fs.lb, log = serverLog(t)
	p, err := pkcs11.Open(pkcs11.Config{ModulePath: fs.prim.Module, PINSource: fs.prim.PINFile, HealthInterval: healthInterval,
		Logger: log, Faults: f, Tokens: []*uri.URI{{Token: fs.prim.Label}, {Token: fs.back.Label}},
		Failover: map[string]string{fs.prim.Label: fs.back.Label}})
	if err != nil {
		t.Fatal(err)
	}
	fs.p = p
	reg := newRegistry(t, p, log, nil, provider.Policy{})
	signer, err := p.Signer(context.Background(), "pkcs11:token="+fs.prim.Label+";object=host")
	if err != nil {
		t.Fatal(err)
	}
	fs.srv = startServer(t, reg, []crypto.Signer{signer}, log)
	fs.cfg = clientConfig(fs.srv, pub, "")
	return fs
}
