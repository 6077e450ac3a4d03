package transport

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"hash"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/cpu"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/wire"
)

func testRegistry(t testing.TB) *provider.Registry {
	t.Helper()
	reg := provider.New(provider.Config{})
	for _, p := range []provider.Provider{cpu.New(cpu.Detect()), software.New()} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

var (
	keysOnce sync.Once
	testKeys map[string]crypto.Signer
)

// hostKeysForTest returns one key of each type, made once.
func hostKeysForTest(t testing.TB) map[string]crypto.Signer {
	keysOnce.Do(func() {
		_, ed, _ := ed25519.GenerateKey(rand.Reader)
		p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
		rk, _ := rsa.GenerateKey(rand.Reader, 2048)
		testKeys = map[string]crypto.Signer{"ssh-ed25519": ed, "ecdsa-sha2-nistp256": p256, "ecdsa-sha2-nistp384": p384,
			"ecdsa-sha2-nistp521": p521, "ssh-rsa": rk}
	})
	return testKeys
}

var (
	certsOnce sync.Once
	testCerts []*ssh.Certificate
)

// hostCertsForTest certifies every test host key with a throwaway CA.
func hostCertsForTest(t testing.TB) []*ssh.Certificate {
	certsOnce.Do(func() {
		_, caKey, _ := ed25519.GenerateKey(rand.Reader)
		ca, _ := ssh.NewSignerFromSigner(caKey)
		for _, k := range allHostKeys(t) {
			pub, _ := ssh.NewPublicKey(k.Public())
			c := &ssh.Certificate{Key: pub, CertType: ssh.HostCert, KeyId: "test host", ValidPrincipals: []string{"127.0.0.1"},
				ValidBefore: ssh.CertTimeInfinity}
			if err := c.SignCert(rand.Reader, ca); err != nil {
				panic(err)
			}
			testCerts = append(testCerts, c)
		}
	})
	return testCerts
}

func allHostKeys(t testing.TB) []crypto.Signer {
	m := hostKeysForTest(t)
	return []crypto.Signer{m["ssh-ed25519"], m["ecdsa-sha2-nistp256"], m["ecdsa-sha2-nistp384"], m["ecdsa-sha2-nistp521"], m["ssh-rsa"]}
}

// testServer accepts connections, runs the transport and a minimal upper
// layer: "none" authentication, then global requests:
//
//	echo: replies with the request data
//	data: hashes the data (no reply)
//	sum:  replies with the SHA-256 of every "data" so far
//	pull: sends N bytes to the client as "data" requests, then "end"
type testServer struct {
	t      testing.TB
	srv    *Server
	l      net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
	conns  []*Conn
	wrapNC func(net.Conn) net.Conn // the client's side, in dial
	// wrapServerNC wraps the server's side of each accepted connection
	// (under mu).
	wrapServerNC func(net.Conn) net.Conn
}

// newTestServer serves cfg on a listener of its own; each opt changes the
// server before it serves (so a change is not a data race with accept).
func newTestServer(t testing.TB, cfg *Config, opts ...func(*Server)) *testServer {
	t.Helper()
	if cfg.Registry == nil {
		cfg.Registry = testRegistry(t)
	}
	if cfg.HostKeys == nil {
		cfg.HostKeys = allHostKeys(t)
		if cfg.HostCertificates == nil {
			cfg.HostCertificates = hostCertsForTest(t)
		}
	}
	if os.Getenv("OFFLOAD_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range opts {
		opt(srv)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, srv: srv, l: l}
	ts.wg.Add(1)
	go ts.accept()
	t.Cleanup(ts.close)
	return ts
}

func (ts *testServer) close() {
	ts.l.Close()
	ts.mu.Lock()
	for _, c := range ts.conns {
		c.Close()
	}
	ts.mu.Unlock()
	ts.wg.Wait()
}

func (ts *testServer) accept() {
	defer ts.wg.Done()
	for {
		nc, err := ts.l.Accept()
		if err != nil {
			return
		}
		ts.mu.Lock()
		if ts.wrapServerNC != nil {
			nc = ts.wrapServerNC(nc)
		}
		ts.mu.Unlock()
		ts.wg.Add(1)
		go func() {
			defer ts.wg.Done()
			ts.record(ts.serve(nc))
		}()
	}
}

func (ts *testServer) record(err error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.errs = append(ts.errs, err)
}

// connErrors returns the errors connections ended with.
func (ts *testServer) connErrors() []error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]error(nil), ts.errs...)
}

func (ts *testServer) serve(nc net.Conn) error {
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	c, err := ts.srv.Handshake(nc)
	if err != nil {
		return err
	}
	nc.SetDeadline(time.Time{})
	ts.mu.Lock()
	ts.conns = append(ts.conns, c)
	ts.mu.Unlock()
	defer c.Close()
	return serveUpper(c)
}

// serveUpper is the stand-in for auth and the connection layer.
func serveUpper(c *Conn) error {
	h := sha256.New()
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return err
		}
		if err := handleUpper(c, p, h); err != nil {
			return err
		}
	}
}

func handleUpper(c *Conn, p []byte, h hash.Hash) error {
	r := wire.NewReader(p)
	switch r.Byte("msg") {
	case wire.MsgServiceRequest:
		return c.WritePacket(wire.AppendString([]byte{wire.MsgServiceAccept}, r.String("service")))
	case wire.MsgUserAuthRequest:
		return c.WritePacket([]byte{wire.MsgUserAuthSuccess})
	case wire.MsgGlobalRequest:
		return globalRequest(c, r, h)
	case wire.MsgChannelOpen:
		r.String("type")
		reply := wire.AppendUint32([]byte{wire.MsgChannelOpenFailure}, r.Uint32("sender"))
		reply = wire.AppendUint32(reply, 1)
		reply = wire.AppendString(reply, "no channels here")
		return c.WritePacket(wire.AppendString(reply, ""))
	}
	return c.WritePacket(wire.AppendUint32([]byte{wire.MsgUnimplemented}, 0))
}

func globalRequest(c *Conn, r *wire.Reader, h hash.Hash) error {
	name := r.String("name")
	wantReply := r.Bool("want reply")
	data := r.Rest()
	switch name {
	case "data":
		h.Write(data)
		return nil
	case "echo":
		return c.WritePacket(append([]byte{wire.MsgRequestSuccess}, data...))
	case "sum":
		sum := h.Sum(nil)
		h.Reset()
		return c.WritePacket(append([]byte{wire.MsgRequestSuccess}, sum...))
	case "pull":
		return pull(c, wire.NewReader(data).Uint64("n"))
	}
	if wantReply {
		return c.WritePacket([]byte{wire.MsgRequestFailure})
	}
	return nil
}

// pull sends n pseudo-random bytes as "data" requests and an "end" with
// their SHA-256, from another goroutine so the reader keeps reading.
func pull(c *Conn, n uint64) error {
	go func() {
		h := sha256.New()
		buf := make([]byte, 32<<10)
		p := make([]byte, 0, 64<<10)
		for n > 0 {
			k := min(uint64(len(buf)), n)
			rand.Read(buf[:k])
			h.Write(buf[:k])
			p = wire.AppendString(append(p[:0], wire.MsgGlobalRequest), "data")
			p = append(wire.AppendBool(p, false), buf[:k]...)
			if c.WritePacket(p) != nil {
				return
			}
			n -= k
		}
		p = wire.AppendString(append(p[:0], wire.MsgGlobalRequest), "end")
		c.WritePacket(append(wire.AppendBool(p, false), h.Sum(nil)...))
	}()
	return nil
}

// clientConfig returns an x/crypto/ssh client config for one algorithm
// combination.
func clientConfig(kex, cipher, mac, hostKeyAlg string) *ssh.ClientConfig {
	cfg := &ssh.ClientConfig{
		User:            "test",
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Timeout:         20 * time.Second,
	}
	if kex != "" {
		cfg.KeyExchanges = []string{kex}
	}
	if cipher != "" {
		cfg.Ciphers = []string{cipher}
	}
	if mac != "" {
		cfg.MACs = []string{mac}
	}
	if hostKeyAlg != "" {
		cfg.HostKeyAlgorithms = []string{hostKeyAlg}
	}
	return cfg
}

// dial connects an x/crypto/ssh client to ts.
func (ts *testServer) dial(t testing.TB, cfg *ssh.ClientConfig) (*ssh.Client, <-chan *ssh.Request) {
	t.Helper()
	nc, err := net.Dial("tcp", ts.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if ts.wrapNC != nil {
		nc = ts.wrapNC(nc)
	}
	cc, chans, reqs, err := ssh.NewClientConn(nc, ts.l.Addr().String(), cfg)
	if err != nil {
		t.Fatalf("handshake: %v (server: %v)", err, ts.connErrors())
	}
	cl := ssh.NewClient(cc, chans, nil)
	t.Cleanup(func() { cl.Close() })
	return cl, reqs
}

// push sends n random bytes to the server and checks its SHA-256.
func push(t testing.TB, cl *ssh.Client, n int) {
	t.Helper()
	h := sha256.New()
	buf := make([]byte, 32<<10)
	for n > 0 {
		k := min(len(buf), n)
		rand.Read(buf[:k])
		h.Write(buf[:k])
		if _, _, err := cl.SendRequest("data", false, buf[:k]); err != nil {
			t.Fatal(err)
		}
		n -= k
	}
	ok, sum, err := cl.SendRequest("sum", true, nil)
	if err != nil || !ok {
		t.Fatalf("sum: ok=%v err=%v", ok, err)
	}
	if string(sum) != string(h.Sum(nil)) {
		t.Fatal("server's SHA-256 of the upload differs")
	}
}

// pullFrom asks the server for n bytes and checks them against the
// SHA-256 it sends at the end.
func pullFrom(t testing.TB, cl *ssh.Client, reqs <-chan *ssh.Request, n uint64) {
	t.Helper()
	if _, _, err := cl.SendRequest("pull", false, wire.AppendUint64(nil, n)); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	var got uint64
	for req := range reqs {
		switch req.Type {
		case "data":
			h.Write(req.Payload)
			got += uint64(len(req.Payload))
		case "end":
			if got != n || string(req.Payload) != string(h.Sum(nil)) {
				t.Fatalf("download: got %d of %d bytes, hash match %v", got, n, string(req.Payload) == string(h.Sum(nil)))
			}
			return
		}
	}
	t.Fatal("connection closed during download")
}

var errNoConn = errors.New("no connection")

func (ts *testServer) lastConn() (*Conn, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.conns) == 0 {
		return nil, errNoConn
	}
	return ts.conns[len(ts.conns)-1], nil
}

func longTest() bool { return strings.TrimSpace(os.Getenv("OFFLOAD_LONG")) == "1" }

// waitFor polls cond for up to five seconds.
func waitFor(cond func() bool) bool {
	for i := 0; i < 500; i++ {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
