package hostile

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/sshd/wire"
	"github.com/offload/offload/test/hostile/rawclient"
)

// TestChannels breaks the connection protocol after a successful login.
func TestChannels(t *testing.T) {
	e := newEnv(t, nil)
	open := func(t *testing.T, rc *rawclient.Conn) *rawclient.Channel {
		t.Helper()
		ch, err := rc.OpenSession(7, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	e.run("data-to-unknown-channel", func(t *testing.T) {
		rc := e.loggedIn(t)
		rc.WritePacket(rawclient.DataPacket(4242, []byte("hello")))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
	e.run("window-adjust-unknown-channel", func(t *testing.T) {
		rc := e.loggedIn(t)
		open(t, rc)
		rc.WritePacket(rawclient.WindowAdjustPacket(99, 1))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
	e.run("close-unknown-channel", func(t *testing.T) {
		rc := e.loggedIn(t)
		rc.WritePacket(wire.AppendUint32([]byte{wire.MsgChannelClose}, 0xffffffff))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
	e.run("unknown-message-numbers", func(t *testing.T) {
		rc := e.loggedIn(t)
		for _, msg := range []byte{83, 101, 127, 200} {
			rc.WritePacket([]byte{msg, 0xde, 0xad})
			expectUnimplemented(t, rc, msg)
		}
		open(t, rc) // the connection goes on
	})
	e.run("window-overflow", func(t *testing.T) {
		rc := e.loggedIn(t)
		ch := open(t, rc)
		rc.WritePacket(rawclient.WindowAdjustPacket(ch.Remote, 0xffffffff))
		rc.WritePacket(rawclient.WindowAdjustPacket(ch.Remote, 0xffffffff))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
	e.run("data-beyond-window", func(t *testing.T) {
		rc := e.loggedIn(t)
		ch := open(t, rc)
		// No command runs, so nothing consumes the data: the server's
		// window is the most it may have to buffer.
		t.Logf("server window %d bytes, max packet %d", ch.Window, ch.MaxPacket)
		buf := make([]byte, int(ch.Window)+int(ch.MaxPacket))
		go ch.Send(buf)
		expectClosedWithReason(t, rc, wire.DisconnectProtocolError)
	})
	e.run("oversized-data-packet", func(t *testing.T) {
		rc := e.loggedIn(t)
		ch := open(t, rc)
		rc.WritePacket(ch.DataPacket(make([]byte, ch.MaxPacket+1)))
		// OpenSSH drops such a packet and logs it; refusing it is as
		// good. Either way the connection must stay sane.
		err := ch.Request("env", true, wire.AppendString(wire.AppendString(nil, "NOT_ACCEPTED"), "x"))
		var d *rawclient.DisconnectError
		switch {
		case errors.As(err, &d) && d.Reason == wire.DisconnectProtocolError:
			t.Logf("server refused the packet: %v", d)
		case err != nil && strings.Contains(err.Error(), "refused"):
			t.Logf("server accepted a data packet of max packet + 1 bytes (%d) and goes on", ch.MaxPacket+1)
		default:
			t.Errorf("after an oversized data packet: %v", err)
		}
	})
	e.run("data-after-close", func(t *testing.T) {
		rc := e.loggedIn(t)
		ch := open(t, rc)
		rc.WritePacket(wire.AppendUint32([]byte{wire.MsgChannelClose}, ch.Remote))
		rc.WritePacket(ch.DataPacket([]byte("late")))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
	e.run("malformed-channel-open", func(t *testing.T) {
		rc := e.loggedIn(t)
		rc.WritePacket(append(wire.AppendString([]byte{wire.MsgChannelOpen}, "session"), 1, 2))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
	e.run("session-flood", func(t *testing.T) { sessionFlood(t, e) })
	e.run("channel-request-flood", func(t *testing.T) {
		rc := e.loggedIn(t)
		ch := open(t, rc)
		req := wire.AppendUint32([]byte{wire.MsgChannelRequest}, ch.Remote)
		req = wire.AppendString(req, "env")
		req = wire.AppendBool(req, true)
		req = wire.AppendString(wire.AppendString(req, "NOT_ACCEPTED"), "x")
		floodUnread(t, rc, req, 200000)
	})
	e.run("global-request-flood", func(t *testing.T) {
		rc := e.loggedIn(t)
		req := wire.AppendString([]byte{wire.MsgGlobalRequest}, "keepalive@openssh.com")
		req = wire.AppendBool(req, true)
		floodUnread(t, rc, req, 200000)
	})
}

// sessionFlood opens more sessions than MaxSessions: the extra ones must
// be refused and the connection must stay usable.
func sessionFlood(t *testing.T, e *env) {
	rc := e.loggedIn(t)
	opened, refused := 0, 0
	for i := range 40 {
		_, err := rc.OpenSession(uint32(100+i), 1<<20)
		if err != nil {
			if _, ok := err.(*rawclient.DisconnectError); ok {
				t.Fatalf("server disconnected on session %d: %v", i, err)
			}
			refused++
			continue
		}
		opened++
	}
	t.Logf("%d sessions opened, %d refused", opened, refused)
	if refused == 0 {
		t.Error("no session refused: MaxSessions not enforced")
	}
	ch, err := rc.OpenSession(1, 1<<20)
	if err == nil {
		t.Error("session accepted beyond MaxSessions")
		return
	}
	_ = ch
	if _, ok := err.(*rawclient.DisconnectError); ok {
		t.Fatalf("server disconnected: %v", err)
	}
}

// floodUnread sends n copies of a request that wants a reply while never
// reading: the server must bound what it queues for a peer that does
// not read, and end the connection.
func floodUnread(t *testing.T, rc *rawclient.Conn, req []byte, n int) {
	// The client's receive buffer is left alone: shrinking it below one
	// segment makes loopback TCP stall in retransmission backoff, which
	// tests the kernel rather than the server.
	pkt := rc.Padding(len(req))
	done := make(chan int, 1)
	go func() {
		sent := 0
		for sent < n {
			var batch []byte
			for range 1000 {
				batch = append(batch, rc.Seal(rawclient.Packet(req, pkt))...)
			}
			if rc.WriteRaw(batch) != nil {
				break
			}
			sent += 1000
		}
		done <- sent
	}()
	sent := <-done
	t.Logf("sent %d requests before the server stopped reading", sent)
	if sent >= n {
		// The server kept up; it must still be sane and answer.
		t.Logf("server absorbed %d unread requests", n)
		return
	}
	expectClosedWithReason(t, rc, wire.DisconnectProtocolError)
}

// expectUnimplemented reads up to the server's SSH_MSG_UNIMPLEMENTED for
// the message just sent, skipping what a server may send unasked.
func expectUnimplemented(t *testing.T, rc *rawclient.Conn, sent byte) {
	t.Helper()
	rc.SetDeadline(time.Now().Add(5 * time.Second))
	defer rc.SetDeadline(time.Time{})
	for {
		p, err := rc.ReadPacket()
		if err != nil {
			t.Fatalf("after message %d: %v, want UNIMPLEMENTED", sent, err)
		}
		switch p[0] {
		case wire.MsgUnimplemented:
			return
		case wire.MsgIgnore, wire.MsgDebug, wire.MsgGlobalRequest:
			continue
		}
		t.Fatalf("after message %d: got message %d, want UNIMPLEMENTED", sent, p[0])
	}
}
