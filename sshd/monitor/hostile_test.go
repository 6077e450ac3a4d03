package monitor

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/transport"
	"github.com/offload/offload/sshd/wire"
)

// The pre-auth worker these tests start is this test binary playing a
// compromised worker: it tries what a worker that a client has taken over
// could, and reports each answer in a log line.
func TestMain(m *testing.M) {
	if os.Getenv(ipc.RoleEnv) == ipc.RolePreauth {
		os.Exit(hostileWorker())
	}
	os.Exit(m.Run())
}

// userSeed makes the client key both the test and the worker know.
var userSeed = bytes.Repeat([]byte{7}, ed25519.SeedSize)

func hostileWorker() int {
	child, err := ipc.OpenChild()
	if err != nil {
		return 1
	}
	p := child.Peer
	conns := make(chan *ipc.NewConn, 64)
	child.Serve(func(m *ipc.Message) {
		for _, f := range m.Files {
			f.Close()
		}
		if m.Type == ipc.TypeNewConn {
			nc, _ := ipc.ParseNewConn(m.Payload)
			conns <- nc
		}
	})
	// The test picks the worker's part by the server version it
	// configures (the only setting that reaches a worker unchanged).
	if play := scenarios[mustPlan(child.Config).Version]; play != nil {
		play(p, conns, child.Config)
		<-p.Done()
		return 0
	}
	nc := <-conns
	probes(p, nc.ConnID, child.Config)
	<-p.Done()
	return 0
}

func probes(p *ipc.Peer, id uint64, cfg *ipc.ChildConfig) {
	ctx := context.Background()
	report := func(name string, _ []byte, err error) {
		p.Notify(ipc.TypeLog, (&ipc.Log{Msg: fmt.Sprintf("probe %s: %v", name, err)}).Marshal())
	}
	call := func(name string, t ipc.Type, payload []byte) []byte {
		b, err := p.Call(ctx, t, payload)
		report(name, b, err)
		return b
	}
	hostKey := mustPlan(cfg).HostPublicKeys[0]
	sign := func(conn uint64, pub, h []byte) []byte {
		return (&ipc.SignRequest{ConnID: conn, Alg: "ssh-ed25519", Pub: pub, H: h}).Marshal()
	}
	call("handoff-before-auth", ipc.TypeHandoff, (&ipc.HandoffRequest{ConnID: id, State: []byte{1}}).Marshal())
	call("begin-decide-before-kex", ipc.TypeBeginDecide, (&ipc.DecideRequest{ConnID: id, Req: signedRequest(make([]byte, 32))}).Marshal())
	call("sign-short-hash", ipc.TypeSign, sign(id, hostKey, make([]byte, 10)))
	call("sign-other-key", ipc.TypeSign, sign(id, []byte("not a key"), make([]byte, 32)))
	call("sign-other-conn", ipc.TypeSign, sign(id+1000, hostKey, make([]byte, 32)))
	sessionID := bytes.Repeat([]byte{0x55}, 32)
	call("sign-first", ipc.TypeSign, sign(id, hostKey, sessionID))
	call("decide-before-begin", ipc.TypeDecide, (&ipc.DecideRequest{ConnID: id, Req: signedRequest(sessionID)}).Marshal())
	forged := signedRequest(bytes.Repeat([]byte{0x66}, 32)) // over a session id the monitor never signed
	b := call("decide-forged", ipc.TypeBeginDecide, (&ipc.DecideRequest{ConnID: id, Req: forged}).Marshal())
	if d, err := ipc.ParseDecision(b); err == nil {
		report(fmt.Sprintf("decide-forged-verdict-%d", d.Verdict), nil, nil)
	}
	call("begin-decide-again", ipc.TypeBeginDecide, (&ipc.DecideRequest{ConnID: id, Req: signedRequest(sessionID)}).Marshal())
	call("handoff-unauthenticated", ipc.TypeHandoff, (&ipc.HandoffRequest{ConnID: id, State: []byte{1}}).Marshal())
	call("aead-from-worker", ipc.TypeAEADNew, (&ipc.AEADNew{Alg: "aes128-gcm", Key: make([]byte, 16)}).Marshal())
	for i := 1; i <= 3; i++ {
		call(fmt.Sprintf("rekey-%d", i), ipc.TypeSign, sign(id, hostKey, bytes.Repeat([]byte{byte(i)}, 32)))
	}
	real := signedRequest(sessionID)
	b = call("decide-real", ipc.TypeDecide, (&ipc.DecideRequest{ConnID: id, Req: real}).Marshal())
	if d, err := ipc.ParseDecision(b); err == nil {
		report(fmt.Sprintf("decide-real-verdict-%d", d.Verdict), nil, nil)
	}
	call("sign-after-auth", ipc.TypeSign, sign(id, hostKey, bytes.Repeat([]byte{9}, 32)))
	r, w, _ := os.Pipe()
	p.Notify(ipc.TypeLog, (&ipc.Log{Msg: "probe descriptor: sent"}).Marshal(), w)
	r.Close()
	w.Close()
}

// signedRequest is alice's publickey request signed over sessionID.
func signedRequest(sessionID []byte) *ipc.AuthRequest {
	priv := ed25519.NewKeyFromSeed(userSeed)
	signer, _ := ssh.NewSignerFromSigner(priv)
	pub := signer.PublicKey().Marshal()
	var data []byte
	data = wire.AppendBytes(data, sessionID)
	data = append(data, wire.MsgUserAuthRequest)
	for _, s := range []string{"alice", "ssh-connection", "publickey"} {
		data = wire.AppendString(data, s)
	}
	data = wire.AppendBool(data, true)
	data = wire.AppendString(data, "ssh-ed25519")
	data = wire.AppendBytes(data, pub)
	sig, _ := signer.Sign(nil, data)
	return &ipc.AuthRequest{User: "alice", Service: "ssh-connection", Method: "publickey", HasSig: true,
		Algo: "ssh-ed25519", KeyBlob: pub, Sig: ssh.Marshal(sig)}
}

type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCompromisedWorker: whatever a worker sends, the monitor grants
// nothing without a valid proof over the session it signed for, signs
// nothing but exchange hashes of the worker's own connections within the
// limits, hands nothing over unauthenticated, and stops a worker that
// sends a descriptor.
func TestCompromisedWorker(t *testing.T) {
	_, hostPriv, _ := ed25519.GenerateKey(nil)
	signer, pubs, err := transport.NewHostKeySigner([]crypto.Signer{hostPriv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	clientPub, _ := ssh.NewPublicKey(ed25519.NewKeyFromSeed(userSeed).Public())
	ak := filepath.Join(home, "authorized_keys")
	os.WriteFile(ak, ssh.MarshalAuthorizedKey(clientPub), 0o644)
	me := currentUser(t)
	logs := &logLines{}
	authCfg := &auth.Config{AuthorizedKeysFiles: []string{ak}, IgnoreFileModes: true, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		LookupUser: func(string) (*user.User, error) { return me, nil }}
	m, err := New(Config{
		Processes: Processes{Workers: 1}, HostKeys: signer, HostPublicKeys: pubs,
		NewLogin: func(sid, _ []byte, local, remote net.Addr) (Login, error) {
			a, err := auth.NewAuthority(authCfg, sid, remote)
			return &testLogin{Authority: a}, err
		},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	go func() { c, _ := net.Dial("tcp", l.Addr().String()); time.Sleep(30 * time.Second); c.Close() }()
	server, _ := l.Accept()
	done, err := m.Admit(server, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-testenv.Timeout(t):
		t.Fatalf("the connection did not end; log:\n%s", logs)
	}
	want := map[string]string{
		"handoff-before-auth":     "request out of order",
		"sign-short-hash":         "not the size of an exchange hash",
		"sign-other-key":          "not a host key",
		"sign-other-conn":         "no such connection",
		"sign-first":              "<nil>",
		"decide-before-begin":     "request out of order",
		"begin-decide-before-kex": "request out of order",
		"begin-decide-again":      "request out of order",
		"decide-forged":           "<nil>",
		"handoff-unauthenticated": "request out of order",
		"aead-from-worker":        "not for a preauth process",
		"rekey-1":                 "<nil>",
		"rekey-2":                 "<nil>",
		"rekey-3":                 "too many key re-exchanges",
		"decide-real":             "<nil>",
		"sign-after-auth":         "request out of order",
	}
	out := logs.String()
	for probe, answer := range want {
		line := lineWith(out, "probe "+probe+":")
		if line == "" || !strings.Contains(line, answer) {
			t.Errorf("probe %s: %q, want an answer with %q", probe, line, answer)
		}
	}
	for _, must := range []string{"probe decide-forged-verdict-0", "probe decide-real-verdict-1", "child broke the protocol"} {
		if !strings.Contains(out, must) {
			t.Errorf("log lacks %q", must)
		}
	}
	if t.Failed() {
		t.Logf("log:\n%s", out)
	}
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

type testLogin struct{ auth.Authority }

func (*testLogin) Settings() *connection.Config { return &connection.Config{} }

func currentUser(t *testing.T) *user.User {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// mustPlan decodes the plan of a child's configuration; the child of
// these tests has no test to fail, so a bad plan ends it.
func mustPlan(cfg *ipc.ChildConfig) *plan.Plan {
	pl, err := plan.Parse(cfg.Plan)
	if err != nil {
		panic(err)
	}
	return pl
}
