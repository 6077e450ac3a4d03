package monitor

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/transport"
)

// The scenarios a hostile worker plays, by the server version the test
// configures (plan.Plan.Version).
var scenarios = map[string]func(p *ipc.Peer, conns <-chan *ipc.NewConn, cfg *ipc.ChildConfig){
	"auth-over": playAuthOver,
	"sign-race": playSignRace,
	"forge":     playForge,
	"broken":    playBroken,
	"crash":     playCrash,
	"exit0":     playExit0,
	"unknown":   playUnknown,
}

func report(p *ipc.Peer, format string, args ...any) {
	p.Notify(ipc.TypeLog, (&ipc.Log{Msg: "probe " + fmt.Sprintf(format, args...)}).Marshal())
}

func signFirst(p *ipc.Peer, cfg *ipc.ChildConfig, id uint64, h []byte) error {
	_, err := p.Call(context.Background(), ipc.TypeSign,
		(&ipc.SignRequest{ConnID: id, Alg: "ssh-ed25519", Pub: mustPlan(cfg).HostPublicKeys[0], H: h}).Marshal())
	return err
}

func passwordRequest(pw string) *ipc.AuthRequest {
	return &ipc.AuthRequest{User: "alice", Service: "ssh-connection", Method: "password", Password: pw}
}

// decide asks for a decision and reports its verdict or error.
func decide(p *ipc.Peer, name string, t ipc.Type, id uint64, req *ipc.AuthRequest) {
	b, err := p.Call(context.Background(), t, (&ipc.DecideRequest{ConnID: id, Req: req}).Marshal())
	if err != nil {
		report(p, "%s: %v", name, err)
		return
	}
	d, err := ipc.ParseDecision(b)
	if err != nil {
		report(p, "%s: %v", name, err)
		return
	}
	report(p, "%s: verdict %d", name, d.Verdict)
}

// playAuthOver: wrong passwords up to the monitor's Disconnect, then the
// right one on the same connection; the right one on a fresh connection.
func playAuthOver(p *ipc.Peer, conns <-chan *ipc.NewConn, cfg *ipc.ChildConfig) {
	nc := <-conns
	signFirst(p, cfg, nc.ConnID, bytes.Repeat([]byte{1}, 32))
	decide(p, "wrong-1", ipc.TypeBeginDecide, nc.ConnID, passwordRequest("wrong"))
	decide(p, "wrong-2", ipc.TypeDecide, nc.ConnID, passwordRequest("wrong"))
	decide(p, "wrong-3", ipc.TypeDecide, nc.ConnID, passwordRequest("wrong"))
	decide(p, "right-after-disconnect", ipc.TypeDecide, nc.ConnID, passwordRequest("right"))
	report(p, "sign-after-disconnect: %v", signFirst(p, cfg, nc.ConnID, bytes.Repeat([]byte{2}, 32)))
	nc = <-conns
	signFirst(p, cfg, nc.ConnID, bytes.Repeat([]byte{3}, 32))
	decide(p, "right-fresh", ipc.TypeBeginDecide, nc.ConnID, passwordRequest("right"))
}

// playSignRace: 64 first-exchange signatures of one connection at once.
func playSignRace(p *ipc.Peer, conns <-chan *ipc.NewConn, cfg *ipc.ChildConfig) {
	nc := <-conns
	var wg sync.WaitGroup
	var got atomic.Int32
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if signFirst(p, cfg, nc.ConnID, bytes.Repeat([]byte{byte(i + 1)}, 32)) == nil {
				got.Add(1)
			}
		}()
	}
	wg.Wait()
	report(p, "sign-race: %d signatures", got.Load())
}

// playForge: a line in OpenSSH's words about another address, a crash
// and an exceeded LoginGraceTime the monitor did not see.
func playForge(p *ipc.Peer, conns <-chan *ipc.NewConn, _ *ipc.ChildConfig) {
	a, b := <-conns, <-conns
	p.Notify(ipc.TypeLog, (&ipc.Log{Level: int8(slog.LevelInfo), Msg: "Accepted publickey for root from 10.9.9.9 port 22 ssh2",
		Attrs: []ipc.LogAttr{{Key: "openssh", Value: true}}}).Marshal())
	p.Notify(ipc.TypeConnDone, (&ipc.ConnDone{ConnID: a.ConnID, Outcome: ipc.OutcomeCrash}).Marshal())
	p.Notify(ipc.TypeConnDone, (&ipc.ConnDone{ConnID: b.ConnID, Outcome: ipc.OutcomeGrace}).Marshal())
}

// playBroken: the first worker answers a request never made; the one
// started in its place serves.
func playBroken(p *ipc.Peer, conns <-chan *ipc.NewConn, _ *ipc.ChildConfig) {
	nc := <-conns
	if nc.ConnID == 1 {
		p.Reply(&ipc.Message{ID: 0xfffffff0}, nil, nil)
		time.Sleep(time.Hour) // and carries on as if nothing happened (a timer: no deadlock exit)
	}
	report(p, "served conn %d", nc.ConnID)
	p.Notify(ipc.TypeConnDone, (&ipc.ConnDone{ConnID: nc.ConnID, Outcome: ipc.OutcomeNoAuth}).Marshal())
}

// playUnknown: a post-auth process's notification (dropped), then a
// request of a type in no table (type 17, once a Begin of its own).
func playUnknown(p *ipc.Peer, conns <-chan *ipc.NewConn, _ *ipc.ChildConfig) {
	<-conns
	p.Notify(ipc.TypeAEADClose, (&ipc.AEADHandle{Handle: 1}).Marshal())
	report(p, "aead-close: sent")
	_, err := p.Call(context.Background(), 17, nil)
	report(p, "type-17: %v", err)
}

// busyTable is the worker's busy table.
func busyTable() *ipc.BusyTable {
	fd, _ := strconv.Atoi(os.Getenv(ipc.BusyFDEnv))
	t, err := ipc.OpenBusyTable(os.NewFile(uintptr(fd), "busy"))
	if err != nil {
		os.Exit(3)
	}
	return t
}

// playCrash: three connections; the one from 127.0.0.3 is being worked
// on when the worker crashes.
func playCrash(p *ipc.Peer, conns <-chan *ipc.NewConn, _ *ipc.ChildConfig) {
	t := busyTable()
	for range 3 {
		nc := <-conns
		s := t.Slot(nc.ConnID)
		if strings.HasPrefix(nc.Remote, "127.0.0.3:") {
			s.Busy()
		}
	}
	report(p, "crashing")
	time.Sleep(100 * time.Millisecond) // the report goes first
	os.Exit(2)
}

// playExit0: a connection marked busy, and a clean exit.
func playExit0(p *ipc.Peer, conns <-chan *ipc.NewConn, _ *ipc.ChildConfig) {
	t := busyTable()
	nc := <-conns
	t.Slot(nc.ConnID).Busy()
	os.Exit(0)
}

// rig is a monitor whose worker plays a scenario.
type rig struct {
	m    *Monitor
	logs *logLines
	l    net.Listener
	mu   sync.Mutex
	ends map[string]ConnEnd // by client address
}

// gatedSigner holds the first signature until gate says so.
type gatedSigner struct {
	transport.HostKeySigner
	once sync.Once
	gate func()
}

func (g *gatedSigner) SignExchange(alg string, pub, h []byte) ([]byte, error) {
	g.once.Do(g.gate)
	return g.HostKeySigner.SignExchange(alg, pub, h)
}

func startRig(t *testing.T, scenario string, authCfg *auth.Config, gate func(*logLines)) *rig {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(nil)
	signer, pubs, err := transport.NewHostKeySigner([]crypto.Signer{hostPriv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{logs: &logLines{}, ends: map[string]ConnEnd{}}
	if gate != nil {
		signer = &gatedSigner{HostKeySigner: signer, gate: func() { gate(r.logs) }}
	}
	me := currentUser(t)
	if authCfg == nil {
		authCfg = &auth.Config{}
	}
	authCfg.Logger = slog.New(slog.NewTextHandler(r.logs, nil))
	authCfg.LookupUser = func(string) (*user.User, error) { return me, nil }
	r.m, err = New(Config{
		HostKeys: signer, HostPublicKeys: pubs, LoginGraceTime: time.Minute,
		Plan: plan.Plan{Version: scenario},
		NewLogin: func(sid, _ []byte, local, remote net.Addr) (Login, error) {
			a, err := auth.NewAuthority(authCfg, sid, remote)
			return &testLogin{Authority: a}, err
		},
		Processes: Processes{Workers: 1, OnConnEnd: func(e ConnEnd) {
			r.mu.Lock()
			r.ends[e.Remote.String()] = e
			r.mu.Unlock()
		}},
		Logger: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.m.Shutdown(context.Background())
		if t.Failed() {
			t.Logf("log:\n%s", r.logs)
		}
	})
	if r.l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.l.Close() })
	return r
}

// admit connects from src (127.0.0.x) and admits the server's end; it
// returns the client's address and when the connection ended.
func (r *rig) admit(t *testing.T, src string) (string, <-chan struct{}) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", r.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	server, err := r.l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	done, err := r.m.Admit(server, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.LocalAddr().String(), done
}

// end waits for the connection to end and returns how.
func (r *rig) end(t *testing.T, addr string, done <-chan struct{}) ConnEnd {
	t.Helper()
	select {
	case <-done:
	case <-testenv.Timeout(t):
		t.Fatalf("connection from %s did not end", addr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ends[addr]
}

// waitLog waits for a log line containing s.
func (r *rig) waitLog(t *testing.T, s string) string {
	t.Helper()
	var l string
	if !testenv.WaitUntil(t, func() bool { l = lineWith(r.logs.String(), s); return l != "" }) {
		t.Fatalf("no log line with %q", s)
	}
	return l
}

// TestCompromisedWorkerAfterDisconnect: once the monitor has answered
// Disconnect (MaxAuthTries failures it counted itself), it refuses every
// further request for the connection: the right password no longer
// logs in, nothing more is signed.
func TestCompromisedWorkerAfterDisconnect(t *testing.T) {
	r := startRig(t, "auth-over", &auth.Config{MaxAuthTries: 2, PasswordAuthentication: true, PermitRootLogin: auth.RootYes,
		PasswordCallback: func(_, pw string) (bool, error) { return pw == "right", nil }}, nil)
	a1, d1 := r.admit(t, "127.0.0.1")
	r.waitLog(t, "probe sign-after-disconnect")
	a2, d2 := r.admit(t, "127.0.0.1")
	r.waitLog(t, "probe right-fresh")
	for probe, answer := range map[string]string{
		"wrong-1":                fmt.Sprintf("verdict %d", auth.Failure),
		"wrong-2":                fmt.Sprintf("verdict %d", auth.Disconnect),
		"wrong-3":                "authentication has ended",
		"right-after-disconnect": "authentication has ended",
		"sign-after-disconnect":  "authentication has ended",
		"right-fresh":            fmt.Sprintf("verdict %d", auth.Success),
	} {
		if l := lineWith(r.logs.String(), "probe "+probe+":"); !strings.Contains(l, answer) {
			t.Errorf("probe %s: %q, want %q", probe, l, answer)
		}
	}
	r.m.Shutdown(context.Background())
	r.end(t, a1, d1)
	r.end(t, a2, d2)
}

// TestCompromisedWorkerSignRace: 64 first-exchange signature requests of
// one connection at once get one signature (the first exchange is one),
// however the requests interleave: the monitor's signer holds the first
// until the others have been answered.
func TestCompromisedWorkerSignRace(t *testing.T) {
	gate := func(logs *logLines) { // the first exchange's request makes the connection busy
		testenv.WaitUntil(t, func() bool { return strings.Count(logs.String(), "request refused") >= 63 })
	}
	r := startRig(t, "sign-race", nil, gate)
	r.admit(t, "127.0.0.1")
	if l := r.waitLog(t, "probe sign-race:"); !strings.Contains(l, "sign-race: 1 signatures") {
		t.Errorf("%s, want 1 signature", l)
	}
}

// TestCompromisedWorkerForges: a worker's line in OpenSSH's words is
// marked [preauth], as OpenSSH's monitor marks its child's, and the
// crash and LoginGraceTime it claims for its connections are not taken:
// no penalty follows from its word.
func TestCompromisedWorkerForges(t *testing.T) {
	r := startRig(t, "forge", nil, nil)
	a1, d1 := r.admit(t, "127.0.0.2")
	a2, d2 := r.admit(t, "127.0.0.3")
	if e := r.end(t, a1, d1); e.Outcome != ipc.OutcomeClosed {
		t.Errorf("claimed crash ended as %v, want closed", e.Outcome)
	}
	if e := r.end(t, a2, d2); e.Outcome != ipc.OutcomeNoAuth {
		t.Errorf("claimed grace-exceeded after no time ended as %v, want noauth", e.Outcome)
	}
	l := r.waitLog(t, "Accepted publickey for root from 10.9.9.9")
	if !strings.Contains(l, `msg="Accepted publickey for root from 10.9.9.9 port 22 ssh2 [preauth]"`) {
		t.Errorf("relayed line %q is not marked [preauth]", l)
	}
}

// TestWorkerChannelBroken: a worker whose channel breaks (a reply to a
// request never made) is stopped and started again; its connection ends
// without a penalty, and a connection admitted meanwhile waits for the
// new worker instead of being dropped.
func TestWorkerChannelBroken(t *testing.T) {
	r := startRig(t, "broken", nil, nil)
	a1, d1 := r.admit(t, "127.0.0.2")
	r.waitLog(t, "channel to a child broke")
	if e := r.end(t, a1, d1); e.Outcome != ipc.OutcomeLost {
		t.Errorf("connection of the broken worker ended as %v, want worker-lost", e.Outcome)
	}
	a2, d2 := r.admit(t, "127.0.0.3")
	r.waitLog(t, "probe served conn 2")
	if e := r.end(t, a2, d2); e.Outcome != ipc.OutcomeNoAuth {
		t.Errorf("connection of the new worker ended as %v", e.Outcome)
	}
}

// TestWorkerUnknownType: a message of a type the monitor's table lacks
// breaks the protocol: the worker is stopped (and started again), its
// connection lost without a penalty. A notification of another role's
// is only dropped.
func TestWorkerUnknownType(t *testing.T) {
	r := startRig(t, "unknown", nil, nil)
	a, d := r.admit(t, "127.0.0.2")
	if l := r.waitLog(t, "child broke the protocol"); !strings.Contains(l, "unexpected type-17 message") {
		t.Errorf("%s, want the worker stopped for type 17", l)
	}
	if !strings.Contains(r.logs.String(), "probe aead-close: sent") {
		t.Error("the worker was stopped before it went on from the dropped notification")
	}
	if e := r.end(t, a, d); e.Outcome != ipc.OutcomeLost {
		t.Errorf("connection of the stopped worker ended as %v, want worker-lost", e.Outcome)
	}
}

// TestWorkerCrashAttribution: a worker crashes while working on one
// connection's input: only that connection is charged; the others it
// held are lost without a penalty. A source on a dead worker twice in a
// row is charged the second time.
func TestWorkerCrashAttribution(t *testing.T) {
	r := startRig(t, "crash", nil, nil)
	first := map[string]ipc.Outcome{"127.0.0.2": ipc.OutcomeLost, "127.0.0.3": ipc.OutcomeCrash, "127.0.0.4": ipc.OutcomeLost}
	second := map[string]ipc.Outcome{"127.0.0.2": ipc.OutcomeCrash, "127.0.0.5": ipc.OutcomeLost, "127.0.0.6": ipc.OutcomeLost}
	for _, round := range []map[string]ipc.Outcome{first, second} {
		addrs, dones := map[string]string{}, map[string]<-chan struct{}{}
		for _, src := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"} {
			if _, ok := round[src]; ok {
				addrs[src], dones[src] = r.admit(t, src)
			}
		}
		for src, want := range round {
			if e := r.end(t, addrs[src], dones[src]); e.Outcome != want {
				t.Errorf("%s: %v, want %v", src, e.Outcome, want)
			}
		}
	}
}

// TestWorkerCleanExitNoCrash: a worker that exits with status 0 did not
// crash: even the connection it marked busy is not charged.
func TestWorkerCleanExitNoCrash(t *testing.T) {
	r := startRig(t, "exit0", nil, nil)
	a, d := r.admit(t, "127.0.0.2")
	if e := r.end(t, a, d); e.Outcome != ipc.OutcomeLost {
		t.Errorf("%v, want worker-lost", e.Outcome)
	}
}

// TestNoWorkerStartsAfterShutdown: a worker respawned while Shutdown
// waits for the child processes is not started (CI's race detector saw
// respawn add to the WaitGroup Shutdown was waiting on, after a worker
// of TestWorkerCleanExitNoCrash exited as the test ended).
func TestNoWorkerStartsAfterShutdown(t *testing.T) {
	r := startRig(t, "exit0", nil, nil)
	if err := r.m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	w, err := r.m.startWorker(0)
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("starting a worker after Shutdown: %v, want ErrClosed", err)
	}
	if w.cmd.Process != nil {
		t.Errorf("a worker process (pid %d) started after Shutdown", w.cmd.Process.Pid)
	}
}

// TestPAMWorkBounds: requests that may wait in PAM are bounded per client
// address and in all, apart from the other requests.
func TestPAMWorkBounds(t *testing.T) {
	var p pamWork
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for range maxPAMWorkSource {
		if !p.take(a) {
			t.Fatal("refused within the per-source bound")
		}
	}
	if p.take(a) {
		t.Fatal("one source got more than its bound")
	}
	if !p.take(b) {
		t.Fatal("another source refused")
	}
	p.give(a)
	if !p.take(a) {
		t.Fatal("a slot given back was not reusable")
	}
	var q pamWork
	for i := range maxPAMWork {
		if !q.take(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})) {
			t.Fatal("refused within the total bound")
		}
	}
	if q.take(netip.MustParseAddr("10.9.9.9")) {
		t.Fatal("more than the total bound")
	}
}

// FuzzMayWaitInPAM: the monitor's look at a worker's request before it
// decides where to serve it never fails on any bytes, and on every request
// the full decoder accepts it agrees with that decoder: only a password or
// keyboard-interactive decision, or a response, of a connection the worker
// owns may wait in PAM, and it is counted against that connection's source.
func FuzzMayWaitInPAM(f *testing.F) {
	f.Add(uint8(ipc.TypeDecide), (&ipc.DecideRequest{ConnID: 1, Req: passwordRequest("x")}).Marshal())
	f.Add(uint8(ipc.TypeBeginDecide), (&ipc.DecideRequest{ConnID: 2, Req: passwordRequest("x")}).Marshal())
	f.Add(uint8(ipc.TypeDecide), (&ipc.DecideRequest{ConnID: 1, Req: &ipc.AuthRequest{User: "u", Method: "publickey"}}).Marshal())
	f.Add(uint8(ipc.TypeRespond), (&ipc.RespondRequest{ConnID: 1, Responses: []string{"x"}}).Marshal())
	f.Add(uint8(ipc.TypeSign), (&ipc.RespondRequest{ConnID: 1}).Marshal())
	f.Add(uint8(ipc.TypeBeginDecide), []byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, typ uint8, payload []byte) {
		c := &child{}
		m := &Monitor{conns: map[uint64]*mconn{
			1: {id: 1, owner: c, remote: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}},
			2: {id: 2, owner: &child{}, remote: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 22}},
		}}
		e, known := newTable()[ipc.Type(typ)]
		if !known {
			return // not served at all: handle stops the child
		}
		src, ok := m.mayWaitInPAM(c, e, &ipc.Message{Type: ipc.Type(typ), Payload: payload})
		if ok && src != netip.MustParseAddr("192.0.2.1") {
			t.Fatalf("source %v", src)
		}
		if want, decoded := waitsInPAM(ipc.Type(typ), payload); decoded && ok != want {
			t.Fatalf("type %d: may wait in PAM %v, the full decoder says %v", typ, ok, want)
		}
	})
}

// waitsInPAM is FuzzMayWaitInPAM's oracle: whether a request that
// ipc's full decoders accept may wait in PAM for connection 1; decoded is
// false when they refuse it (the handler will).
func waitsInPAM(typ ipc.Type, payload []byte) (want, decoded bool) {
	switch typ {
	case ipc.TypeDecide, ipc.TypeBeginDecide:
		d, err := ipc.ParseDecideRequest(payload)
		if err != nil {
			return false, false
		}
		m := d.Req.Method
		return d.ConnID == 1 && (m == "password" || m == "keyboard-interactive"), true
	case ipc.TypeRespond:
		r, err := ipc.ParseRespondRequest(payload)
		return err == nil && r.ConnID == 1, err == nil
	}
	return false, true // no other request waits in PAM
}
