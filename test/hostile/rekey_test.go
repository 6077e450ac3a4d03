package hostile

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/wire"
	"github.com/offload/offload/test/hostile/rawclient"
)

// rekeyLimit makes the server start a key exchange every 256 KiB;
// kexTimeout is how long it waits for a peer to finish one.
const (
	rekeyLimit = 256 << 10
	kexTimeout = 2 * time.Second
)

// TestServerRekey runs against a server that rekeys every 256 KiB
// (the healthy session rekeys with it) and a client that answers the
// server's KEXINIT late: the server must keep its queues bounded while
// it waits, and the data must come through intact once the client
// answers.
func TestServerRekey(t *testing.T) {
	e := newEnv(t, func(c *sshd.Config) {
		c.RekeyLimit = rekeyLimit
		c.KexTimeout = kexTimeout
		c.Conn.WindowSize = 8 << 20 // the client sends 4 MiB without reading
	})
	e.run("late-kex-answer", func(t *testing.T) {
		rc := e.loggedIn(t)
		ch := openWith(t, rc, 1<<30, 32768)
		execShlvl(t, rc, ch, "cat")
		const total = 4 << 20
		data := make([]byte, total)
		rand.Read(data)
		// Send everything without reading: the server's KEXINIT waits
		// unanswered behind its echo while it must bound what it queues.
		if err := ch.Send(data); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		rc.WritePacket(wire.AppendUint32([]byte{wire.MsgChannelEOF}, ch.Remote))
		got, rekeys, err := echoWithRekeys(rc, total)
		if err != nil {
			t.Fatalf("after %d bytes and %d server rekeys: %v", len(got), rekeys, err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("echo differs (%d bytes back of %d)", len(got), total)
		}
		t.Logf("%d bytes echoed intact; the server started %d key exchanges", len(got), rekeys)
		if rekeys < total/rekeyLimit/2 {
			t.Errorf("only %d server rekeys for %d bytes with RekeyLimit %d", rekeys, total, rekeyLimit)
		}
	})
	e.run("client-data-after-its-kexinit", func(t *testing.T) { dataDuringServerRekey(t, e) })
	stalledRekeys(t, e)
}

// dataDuringServerRekey answers each server KEXINIT as asyncssh 2.10
// does: it keeps sending channel data after its own KEXINIT and before
// its NEWKEYS. The server must accept that data (as OpenSSH's sshd does)
// and send nothing but key exchange messages between its KEXINIT and its
// NEWKEYS: rawclient's Expect fails on anything else.
func dataDuringServerRekey(t *testing.T, e *env) {
	rc := e.loggedIn(t)
	ch := catSession(t, rc)
	chunk := make([]byte, 16<<10)
	var sent, got []byte
	rekeys := 0
	rc.SetDeadline(time.Now().Add(2 * replyTimeout))
	for rekeys < 3 {
		rand.Read(chunk)
		if err := ch.Send(chunk); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, chunk...)
		for len(got) < len(sent) {
			m, err := rc.Next()
			if err != nil {
				t.Fatalf("after %d rekeys: %v", rekeys, err)
			}
			switch m[0] {
			case wire.MsgKexInit:
				rekeys++
				sent = append(sent, answerKexSending(t, rc, ch, m)...)
			case wire.MsgChannelData:
				got = append(got, wire.NewReader(m[5:]).Bytes("data")...)
			}
		}
	}
	if !bytes.Equal(got, sent) {
		t.Errorf("echo of %d bytes through %d server rekeys differs", len(sent), rekeys)
	}
}

// answerKexSending completes a server-started exchange, sending channel
// data after each of its own steps; it returns what it sent.
func answerKexSending(t *testing.T, rc *rawclient.Conn, ch *rawclient.Channel, serverInit []byte) []byte {
	t.Helper()
	rc.ServerKexInit = serverInit
	var sent []byte
	send := func() error {
		b := make([]byte, 1000)
		rand.Read(b)
		sent = append(sent, b...)
		return ch.Send(b)
	}
	steps := []func() error{
		func() error { return rc.SendKexInit(nil) }, send,
		func() error { rc.SetServerKexInit(serverInit); return rc.SendECDHInit() }, send,
		rc.ReadECDHReply, send, rc.SendNewKeys, send, rc.ReadNewKeys,
	}
	for i, f := range steps {
		if err := f(); err != nil {
			t.Fatalf("server rekey, step %d: %v", i, err)
		}
	}
	return sent
}

// stalledRekeys leave a key exchange unfinished after login, started by
// either side: KexTimeout must end the connection.
func stalledRekeys(t *testing.T, e *env) {
	stalls := []struct {
		name  string
		stall func(t *testing.T, rc *rawclient.Conn)
	}{
		{"client-kexinit-then-nothing", func(t *testing.T, rc *rawclient.Conn) {
			kexUpTo(t, rc, nil, afterKexInit)
		}},
		{"client-stops-before-newkeys", func(t *testing.T, rc *rawclient.Conn) {
			kexUpTo(t, rc, nil, afterReply)
		}},
		{"server-kexinit-never-answered", func(t *testing.T, rc *rawclient.Conn) {
			ch := openWith(t, rc, 1<<30, 32768)
			execShlvl(t, rc, ch, "cat")
			if err := ch.Send(make([]byte, 2*rekeyLimit)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, s := range stalls {
		e.run(s.name, func(t *testing.T) {
			rc := e.loggedIn(t)
			start := time.Now()
			s.stall(t, rc)
			expectDisconnect(t, rc, wire.DisconnectKeyExchangeFailed)
			t.Logf("disconnected after %v (KexTimeout %v)", time.Since(start).Round(10*time.Millisecond), kexTimeout)
		})
	}
}

// echoWithRekeys reads channel data until n bytes, answering every
// KEXINIT of the server.
func echoWithRekeys(rc *rawclient.Conn, n int) ([]byte, int, error) {
	var got []byte
	rekeys := 0
	rc.SetDeadline(time.Now().Add(2 * replyTimeout))
	for len(got) < n {
		m, err := rc.Next()
		if err != nil {
			return got, rekeys, err
		}
		switch m[0] {
		case wire.MsgKexInit:
			rekeys++
			if err := rc.AnswerKex(m, nil); err != nil {
				return got, rekeys, err
			}
		case wire.MsgChannelData:
			got = append(got, wire.NewReader(m[5:]).Bytes("data")...)
		}
	}
	return got, rekeys, nil
}
