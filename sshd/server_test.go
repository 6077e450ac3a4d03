package sshd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/user"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/auth"
)

// logBuffer collects the server log.
type logBuffer = sshtest.LogBuffer

// startServer runs a server with cfg on a loopback listener.
func startServer(t *testing.T, cfg *Config) (*Server, string, *logBuffer, chan error) {
	t.Helper()
	logs := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return srv, l.Addr().String(), logs, done
}

// handshakeOK reports whether an x/crypto/ssh client gets through the key
// exchange (authentication is expected to fail).
func handshakeOK(t *testing.T, addr string) bool {
	t.Helper()
	reached := false
	cfg := &ssh.ClientConfig{User: "nobody-here", Timeout: 5 * time.Second,
		HostKeyCallback: func(string, net.Addr, ssh.PublicKey) error { reached = true; return nil }}
	c, err := ssh.Dial("tcp", addr, cfg)
	if err == nil {
		c.Close()
	}
	return reached
}

func waitLog(logs *logBuffer, want ...string) bool {
	for i := 0; i < 300; i++ {
		s := logs.String()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(s, w)
		}
		if ok {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// TestHostilePeerIsLoggedAndServerContinues: garbage gets a disconnect
// and a log line naming the peer and the cause.
func TestHostilePeerIsLoggedAndServerContinues(t *testing.T) {
	_, addr, logs, _ := startServer(t, &Config{})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte("SSH-2.0-evil\r\n\x00\x00\x00\x0c\x04\x15\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, _ := io.ReadAll(nc)
	if !bytes.HasPrefix(reply, []byte("SSH-2.0-")) || !bytes.Contains(reply, []byte{1, 0, 0, 0, 2}) {
		t.Fatalf("reply %q lacks a protocol-error DISCONNECT", reply)
	}
	if !waitLog(logs, "remote="+nc.LocalAddr().String(), `reason="protocol error"`, "expected KEXINIT, got message 21") {
		t.Fatalf("log does not name the peer and cause:\n%s", logs.String())
	}
	if !handshakeOK(t, addr) {
		t.Fatal("server stopped serving")
	}
}

// TestMaxStartups: connections beyond MaxStartups are dropped until
// others finish.
func TestMaxStartups(t *testing.T) {
	_, addr, logs, _ := startServer(t, &Config{MaxStartups: 2})
	var idle []net.Conn
	for i := 0; i < 2; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		line := make([]byte, 8)
		if _, err := io.ReadFull(nc, line); err != nil {
			t.Fatal(err)
		}
		idle = append(idle, nc)
	}
	if handshakeOK(t, addr) {
		t.Fatal("a third unauthenticated connection was served")
	}
	if !waitLog(logs, "MaxStartups") {
		t.Fatal("no log line for the dropped connection")
	}
	for _, nc := range idle {
		nc.Close()
	}
	ok := false
	for i := 0; i < 50 && !ok; i++ {
		ok = handshakeOK(t, addr)
		time.Sleep(20 * time.Millisecond)
	}
	if !ok {
		t.Fatal("slots were not given back")
	}
}

// TestLoginGraceTime: a silent client is cut off.
func TestLoginGraceTime(t *testing.T) {
	_, addr, logs, _ := startServer(t, &Config{LoginGraceTime: 200 * time.Millisecond})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The server must close it: the client's own deadline is only the
	// test's, so that a loaded machine's late timer is not a failure.
	nc.SetReadDeadline(testenv.StartupDeadline(t))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("the server did not close the silent connection: %v", err)
	}
	if !waitLog(logs, "handshake", "remote="+nc.LocalAddr().String()) {
		t.Fatalf("no log line:\n%s", logs.String())
	}
}

// TestPanicIsRecovered: a panic while serving one connection is logged
// and the server keeps serving.
func TestPanicIsRecovered(t *testing.T) {
	a := &auth.Config{LookupUser: func(string) (*user.User, error) { panic("boom") }, OnlyUser: "nobody-here"}
	_, addr, logs, _ := startServer(t, &Config{Auth: a})
	handshakeOK(t, addr)
	handshakeOK(t, addr)
	if !strings.Contains(logs.String(), "panic") && !waitLog(logs, "panic") {
		t.Skip("auth did not call LookupUser for this user; nothing panicked")
	}
	if !waitLog(logs, "boom") {
		t.Fatalf("panic not logged:\n%s", logs.String())
	}
}

// TestShutdown: Serve returns ErrServerClosed and a lingering connection is
// ended when the context expires.
func TestShutdown(t *testing.T) {
	srv, addr, _, done := startServer(t, &Config{})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	time.Sleep(50 * time.Millisecond)
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("connection not closed: %v", err)
	}
}

// TestShutdownWaitsForServeConn: connections handed to ServeConn directly
// (as an inetd-style or custom accept loop does) are waited for and, once
// the context expires, disconnected.
func TestShutdownWaitsForServeConn(t *testing.T) {
	srv, err := NewServer(&Config{})
	if err != nil {
		t.Fatal(err)
	}
	client, server := net.Pipe()
	defer client.Close()
	done := make(chan struct{})
	go func() { srv.ServeConn(server); close(done) }()
	buf := make([]byte, 8)
	if _, err := io.ReadFull(client, buf); err != nil { // the server's version line
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	go io.Copy(io.Discard, client)
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown returned %v before the connection ended", err)
	}
	select {
	case <-done:
	case <-testenv.Timeout(t):
		t.Fatal("ServeConn still running after Shutdown")
	}
}

// TestDropStartup: the early-drop hook sees the connections waiting to
// authenticate and drops the new one when it says so.
func TestDropStartup(t *testing.T) {
	var seen []int
	var mu sync.Mutex
	drop := func(pending int) bool {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, pending)
		return pending >= 1
	}
	_, addr, logs, _ := startServer(t, &Config{MaxStartups: 10, DropStartup: drop})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(nc, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if handshakeOK(t, addr) {
		t.Fatal("the hook said drop, but the connection was served")
	}
	if !waitLog(logs, "MaxStartups") {
		t.Fatal("no log line for the dropped connection")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 || seen[0] != 0 || seen[1] != 1 {
		t.Errorf("hook saw pending counts %v, want 0 then 1", seen)
	}
}

// flakyListener fails its first accepts as a process out of descriptors
// does, then hands out one connection, then reports it is closed.
type flakyListener struct {
	net.Listener
	fails int
	conn  net.Conn
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	if c := l.conn; c != nil {
		l.conn = nil
		return c, nil
	}
	return nil, net.ErrClosed
}

// TestAcceptLoopSurvivesEMFILE: running out of descriptors pauses the
// accept loop; it does not end it (it once ended Serve for good).
func TestAcceptLoopSurvivesEMFILE(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	l := &flakyListener{fails: 3, conn: a}
	var got []net.Conn
	err := AcceptLoop(l, func(nc net.Conn) { got = append(got, nc) }, slog.New(slog.DiscardHandler))
	if !errors.Is(err, net.ErrClosed) || len(got) != 1 {
		t.Fatalf("AcceptLoop: %v, %d connections; want the connection after the EMFILEs, then ErrClosed", err, len(got))
	}
}
