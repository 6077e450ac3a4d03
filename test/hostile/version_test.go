package hostile

import (
	"bytes"
	"testing"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// TestVersionExchange sends identification lines the server must refuse.
func TestVersionExchange(t *testing.T) {
	e := newEnv(t, nil)
	refused := []struct {
		name, line string
		reason     uint32
	}{
		{"http", "GET / HTTP/1.1\r\n", wire.DisconnectProtocolVersionNotSupported},
		{"ssh1", "SSH-1.5-old\r\n", wire.DisconnectProtocolVersionNotSupported},
		{"binary", "\x00\xff\xfe\x01garbage\n", wire.DisconnectProtocolVersionNotSupported},
		{"control-char", "SSH-2.0-a\x01b\r\n", wire.DisconnectProtocolError},
		{"banner-before-version", "hello\r\nSSH-2.0-x\r\n", wire.DisconnectProtocolVersionNotSupported},
		{"long-line", "SSH-2.0-" + string(bytes.Repeat([]byte("a"), 300)) + "\r\n", wire.DisconnectProtocolVersionNotSupported},
	}
	for _, c := range refused {
		e.run(c.name, func(t *testing.T) {
			rc := e.dial(t)
			if err := rc.WriteRaw([]byte(c.line)); err != nil {
				t.Fatal(err)
			}
			if _, err := rc.ReadServerVersion(); err != nil {
				t.Fatal(err)
			}
			expectDisconnect(t, rc, c.reason)
		})
	}
	e.run("endless-line", func(t *testing.T) { endlessLine(t, e) })
	e.run("empty-then-eof", func(t *testing.T) {
		rc := e.dial(t)
		rc.WriteRaw([]byte("SSH-2.0-"))
		rc.NC.(interface{ CloseWrite() error }).CloseWrite()
		expectClosed(t, rc, replyTimeout)
	})
}

// endlessLine streams an identification line without end: the server
// must stop reading after 255 bytes, not buffer the rest.
func endlessLine(t *testing.T, e *env) {
	rc := e.dial(t)
	chunk := bytes.Repeat([]byte("x"), 4096)
	sent := 0
	done := make(chan error, 1)
	go func() {
		err := rc.WriteRaw([]byte("SSH-2.0-"))
		for err == nil && sent < 64<<20 {
			err = rc.WriteRaw(chunk)
			sent += len(chunk)
		}
		done <- err
	}()
	if _, err := rc.ReadServerVersion(); err != nil {
		t.Fatal(err)
	}
	d, err := rc.ReadDisconnect(replyTimeout)
	switch {
	case d != nil && d.Reason != wire.DisconnectProtocolVersionNotSupported:
		t.Errorf("DISCONNECT reason %d (%q), want %d", d.Reason, d.Message, wire.DisconnectProtocolVersionNotSupported)
	case d == nil && isTimeout(err):
		t.Errorf("server still reading an endless version line after %v", replyTimeout)
	case d == nil:
		// The server's close can reset the connection before its
		// DISCONNECT is read: unread flood data turns FIN into RST.
		t.Logf("connection ended without a readable DISCONNECT: %v", err)
	}
	select {
	case werr := <-done:
		t.Logf("writer stopped after %d bytes: %v", sent, werr)
	case <-time.After(replyTimeout):
		rc.Close()
		<-done
		t.Errorf("server kept accepting an endless version line (%d bytes)", sent)
	}
}
