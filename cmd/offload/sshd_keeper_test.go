package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
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

func TestKeeperStateRoundTrip(t *testing.T) {
	want := &keeperState{Args: []string{"-f", "/etc/ssh/sshd_config", "-o", "LogLevel=DEBUG"}, Handover: []byte{1, 2, 3}, Files: 4}
	b := want.marshal()
	got, err := parseKeeperState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	for n := 0; n < len(b); n++ {
		if _, err := parseKeeperState(b[:n]); err == nil {
			t.Fatalf("cut to %d of %d bytes was accepted", n, len(b))
		}
	}
	if _, err := parseKeeperState(append(b, 0)); err == nil {
		t.Fatal("a trailing byte was accepted")
	}
}

// FuzzKeeperState: the decoder never panics, and what it accepts encodes
// back to the same bytes.
func FuzzKeeperState(f *testing.F) {
	f.Add((&keeperState{Args: []string{"-f", "x"}, Handover: []byte{1}, Files: 2}).marshal())
	f.Add((&keeperState{}).marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseKeeperState(b)
		if err != nil {
			return
		}
		if again := st.marshal(); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x but it encodes as %x", b, again)
		}
	})
}
