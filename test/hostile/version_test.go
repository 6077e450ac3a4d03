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
	// A line that is no SSH identification gets a line of text (the
	// client speaks no binary packets), one with a control character
	// after SSH-2.0- a DISCONNECT.
	const invalid = "Invalid SSH identification string."
	refused := []struct {
		name, line string
		text       string
		reason     uint32
	}{
		{"http", "GET / HTTP/1.1\r\n", invalid, 0},
		{"ssh1", "SSH-1.5-old\r\n", "Protocol version not supported: this server speaks SSH-2.0 only.", 0},
		{"binary", "\x00\xff\xfe\x01garbage\n", invalid, 0},
		{"control-char", "SSH-2.0-a\x01b\r\n", "", wire.DisconnectProtocolError},
		{"banner-before-version", "hello\r\nSSH-2.0-x\r\n", invalid, 0},
		{"long-line", "SSH-2.0-" + string(bytes.Repeat([]byte("a"), 300)) + "\r\n", invalid, 0},
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
			if c.text == "" {
				expectDisconnect(t, rc, c.reason)
				return
			}
			rc.SetDeadline(time.Now().Add(replyTimeout))
			if got, err := rc.ReadLine(); got != c.text {
				t.Errorf("reply %q (%v), want %q", got, err, c.text)
			}
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
	rc.SetDeadline(time.Now().Add(replyTimeout))
	line, err := rc.ReadLine()
	switch {
	case err == nil && line != "Invalid SSH identification string.":
		t.Errorf("reply %q, want Invalid SSH identification string.", line)
	case err != nil && isTimeout(err):
		t.Errorf("server still reading an endless version line after %v", replyTimeout)
	case err != nil:
		// The server's close can reset the connection before its
		// reply is read: unread flood data turns FIN into RST.
		t.Logf("connection ended without a readable reply: %v", err)
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
