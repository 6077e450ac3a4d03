package connection

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/wire"
)

// expectDisconnect checks that Serve ended with a protocol error and sent
// DISCONNECT with reason protocol error.
func expectDisconnect(t *testing.T, c *client, want string) {
	t.Helper()
	err := c.wait(t)
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("Serve returned %v, want a *ProtocolError", err)
	}
	if pe.Reason != wire.DisconnectProtocolError || c.server.disconnected() != wire.DisconnectProtocolError {
		t.Errorf("reason %d, sent %d", pe.Reason, c.server.disconnected())
	}
	if !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "connection: ") {
		t.Errorf("error %q does not mention %q", err, want)
	}
}

func TestUnknownChannel(t *testing.T) {
	c := startClient(t, nil, self(t))
	c.send(appendWindowAdjust(nil, 42, 10))
	expectDisconnect(t, c, "unknown channel")
}

func TestWindowOverflow(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	c.send(appendWindowAdjust(nil, ch.remote, 0xffffffff))
	expectDisconnect(t, c, "overflows")
}

func TestDataBeyondWindow(t *testing.T) {
	c := startClient(t, &Config{WindowSize: 4096, MaxPacket: 4096}, self(t))
	ch := c.session(t) // no program: nothing reads the data
	for range 2 {
		c.send(wire.AppendBytes(appendChannelMsg(nil, wire.MsgChannelData, ch.remote), make([]byte, 3000)))
	}
	expectDisconnect(t, c, "beyond the window")
}

func TestDoubleClose(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	other := c.session(t)
	ch.exec("sleep 30")
	c.send(appendChannelMsg(nil, wire.MsgChannelClose, ch.remote))
	c.send(appendChannelMsg(nil, wire.MsgChannelClose, ch.remote))
	expectDisconnect(t, c, "channel")
	_ = other
}

func TestRequestAfterClose(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	c.send(appendChannelMsg(nil, wire.MsgChannelClose, ch.remote))
	ch.req("exec", false, wire.AppendString(nil, "true"))
	expectDisconnect(t, c, "channel")
}

func TestMalformedOpen(t *testing.T) {
	c := startClient(t, nil, self(t))
	c.send([]byte{wire.MsgChannelOpen, 0, 0})
	expectDisconnect(t, c, "CHANNEL_OPEN")
}

func TestUnexpectedMessage(t *testing.T) {
	c := startClient(t, nil, self(t))
	c.send([]byte{wire.MsgChannelOpenConfirm, 0, 0, 0, 0})
	expectDisconnect(t, c, "open answer for a channel we did not open")
}

func TestGlobalRequests(t *testing.T) {
	c := startClient(t, nil, self(t))
	ask := func(name string) byte {
		c.send(wire.AppendBool(wire.AppendString([]byte{wire.MsgGlobalRequest}, name), true))
		select {
		case r := <-c.globals:
			return r
		case <-testenv.Timeout(t):
			t.Fatalf("no reply to %s", name)
			return 0
		}
	}
	if ask("keepalive@openssh.com") != wire.MsgRequestFailure {
		t.Errorf("keepalive: want REQUEST_FAILURE as OpenSSH")
	}
	if ask("tcpip-forward") != wire.MsgRequestFailure || ask("x@y") != wire.MsgRequestFailure {
		t.Errorf("unknown request accepted")
	}
	c.session(t)
	if ask("no-more-sessions@openssh.com") != wire.MsgRequestSuccess {
		t.Errorf("no-more-sessions refused")
	}
	if _, err := c.open("session", 1<<20, 32768, nil); err == nil {
		t.Errorf("session opened after no-more-sessions")
	}
	if _, err := c.open("x11", 1<<20, 32768, nil); err == nil {
		t.Errorf("unknown channel type opened")
	}
}

// TestTinyWindow has the client grant a 100-byte window and 16-byte
// packets: the server must split and wait, and the client checks it.
func TestTinyWindow(t *testing.T) {
	c := startClient(t, &Config{WindowSize: 1024, MaxPacket: 1024}, self(t))
	ch, err := c.open("session", 100, 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.exec("cat")
	in := bytes.Repeat([]byte("0123456789abcdef"), 500)
	ch.write(in)
	ch.sendEOF()
	ch.waitClosed(t)
	if !bytes.Equal(ch.stdout.Bytes(), in) {
		t.Errorf("got %d bytes back, want %d", ch.stdout.Len(), len(in))
	}
	c.checkFaults(t)
}

// TestBigTransfer pushes data through cat both ways and compares hashes.
func TestBigTransfer(t *testing.T) {
	size := 8 << 20
	if os.Getenv("OFFLOAD_LONG") == "1" {
		size = 256 << 20
	}
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	h := sha256.New()
	ch.sink = h
	ch.exec("cat")
	chunk := bytes.Repeat([]byte{0x5a, 0xa5, 1, 2, 3}, 6553)
	want := sha256.New()
	for n := 0; n < size; n += len(chunk) {
		ch.write(chunk)
		want.Write(chunk)
	}
	ch.sendEOF()
	ch.waitClosed(t)
	if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
		t.Errorf("sha256 mismatch")
	}
	c.checkFaults(t)
}

// TestNoGoroutineLeak runs sessions, disconnects and checks that the
// goroutine count returns to where it was. The programs are ones the
// disconnect ends (cat sees EOF, the pty shell a hangup): a program that
// outlives its connection (TestProgramOutlivesConnection) keeps one
// goroutine, which reaps it, until it exits.
func TestNoGoroutineLeak(t *testing.T) {
	host, port := echoServer(t) // its accept loop is not counted as a leak
	before := runtime.NumGoroutine()
	func() {
		c := startClient(t, nil, self(t))
		for range 3 {
			ch := c.session(t)
			ch.exec("cat")
		}
		run(t, c, "echo hi", nil)
		pt := c.session(t)
		pt.req("pty-req", true, ptyPayload("xterm", 80, 24, nil))
		pt.req("shell", true, nil)
		sf := c.session(t)
		sf.req("subsystem", true, wire.AppendString(nil, "sftp"))
		fw, err := c.open("direct-tcpip", 1<<20, 32768, directPayload(host, port))
		if err != nil {
			t.Fatal(err)
		}
		fw.write([]byte("x"))
		c.pc.Close()
		if err := c.wait(t); err != nil {
			t.Errorf("Serve: %v", err)
		}
		<-c.done
	}()
	if !testenv.WaitUntil(t, func() bool { return runtime.NumGoroutine() <= before }) {
		n := runtime.NumGoroutine()
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := startClientCtx(t, ctx, nil, self(t))
	ch := c.session(t)
	ch.exec("sleep 30")
	start := time.Now()
	cancel()
	if err := c.wait(t); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve returned %v, want context.Canceled", err)
	}
	if d := time.Since(start); d >= 30*time.Second {
		t.Errorf("teardown took %v: it waited for the command (sleep 30)", d)
	}
}

func TestKeepaliveProbe(t *testing.T) {
	c := startClient(t, &Config{ClientAliveInterval: 20 * time.Millisecond, ClientAliveCountMax: 50}, self(t))
	time.Sleep(200 * time.Millisecond) // the client answers every probe
	select {
	case err := <-c.serveErr:
		t.Fatalf("Serve ended although the client answers: %v", err)
	default:
	}
}

func TestKeepaliveTimeout(t *testing.T) {
	c := startClient(t, &Config{ClientAliveInterval: 10 * time.Millisecond, ClientAliveCountMax: 2}, self(t))
	c.silent.Store(true)
	err := c.wait(t)
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Reason != wire.DisconnectByApplication || c.server.disconnected() != wire.DisconnectByApplication {
		t.Errorf("Serve returned %v, want a client alive timeout", err)
	}
}

// TestKeepaliveNeverDisconnects: a negative ClientAliveCountMax (as
// sshd_config's ClientAliveCountMax 0 is translated) keeps probing a
// silent client and never disconnects it, as OpenSSH's sshd does.
func TestKeepaliveNeverDisconnects(t *testing.T) {
	c := startClient(t, &Config{ClientAliveInterval: 10 * time.Millisecond, ClientAliveCountMax: -1}, self(t))
	c.silent.Store(true)
	if !testenv.WaitUntil(t, func() bool { return c.requests.Load() >= 10 }) {
		t.Fatalf("%d probes sent to a silent client, want 10", c.requests.Load())
	}
	select {
	case err := <-c.serveErr:
		t.Fatalf("Serve ended after %d unanswered probes: %v", c.requests.Load(), err)
	default:
	}
}

// stallConn is a memConn whose writes can be held, as a transport holds
// them during a key exchange, and which counts reads.
type stallConn struct {
	*memConn
	mu    sync.Mutex
	gate  chan struct{} // closed when writes may proceed
	reads atomic.Int64
}

func (s *stallConn) ReadPacket() ([]byte, error) {
	p, err := s.memConn.ReadPacket()
	s.reads.Add(1)
	return p, err
}

func (s *stallConn) WritePacket(p []byte) error {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g != nil {
		<-g
	}
	return s.memConn.WritePacket(p)
}

// TestReadLoopNeverWaitsForWrites holds every write (a key exchange in
// progress) while the peer closes a busy channel: the read loop must keep
// reading, or the key exchange it alone can finish would never end.
func TestReadLoopNeverWaitsForWrites(t *testing.T) {
	srv, cli := memPipe()
	sc := &stallConn{memConn: srv}
	c := &client{t: t, pc: cli, server: srv, serveErr: make(chan error, 1),
		chans: map[uint32]*cchan{}, globals: make(chan byte, 16), done: make(chan struct{})}
	go func() { c.serveErr <- Serve(context.Background(), sc, self(t), nil) }()
	go c.loop()
	defer func() { cli.Close(); c.wait(t) }()
	ch := c.session(t)
	ch.exec("yes")
	ch.waitOutput(t, "y\ny\n")
	gate := make(chan struct{})
	sc.mu.Lock()
	sc.gate = gate
	sc.mu.Unlock()
	time.Sleep(20 * time.Millisecond) // let the stdout pump block in a write
	before := sc.reads.Load()
	c.send(appendChannelMsg(nil, wire.MsgChannelClose, ch.remote))
	c.send(wire.AppendBool(wire.AppendString([]byte{wire.MsgGlobalRequest}, "x@y"), false))
	if !testenv.WaitUntil(t, func() bool { return sc.reads.Load() >= before+2 }) {
		t.Errorf("read loop stalled behind held writes (%d packets read)", sc.reads.Load()-before)
	}
	close(gate)
	sc.mu.Lock()
	sc.gate = nil
	sc.mu.Unlock()
	ch.waitClosed(t)
}
