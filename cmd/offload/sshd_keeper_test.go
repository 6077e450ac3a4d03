package main

import (
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"
)

// TestSshdStopEndsPreauth: a separated daemon stops its connections
// still authenticating at once — they are not sessions to keep — and
// exits without waiting for the shutdown timeout (an hour here).
func TestSshdStopEndsPreauth(t *testing.T) {
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nPrivilegeSeparation yes\n")
	o, err := parseSshdFlags([]string{"-f", cfg, "-shutdown-timeout", "1h"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = stderrLogger(os.Stderr, slog.LevelDebug)
	}
	d, cancel, done := runTestDaemon(t, o, log)
	nc, err := net.Dial("tcp", d.listeners[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The server's version line says the connection reached a worker.
	buf := make([]byte, 4)
	if _, err := io.ReadFull(nc, buf); err != nil || string(buf) != "SSH-" {
		t.Fatalf("no version line: %q %v", buf, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute): // a failure bound: the timeout is an hour
		t.Fatal("the daemon waited for a connection still authenticating")
	}
	nc.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.Copy(io.Discard, nc); os.IsTimeout(err) { // EOF or a reset: closed
		t.Fatalf("the connection was not closed: %v", err)
	}
	if n := d.stats.active.Load(); n != 0 {
		t.Errorf("%d connections still active", n)
	}
}
