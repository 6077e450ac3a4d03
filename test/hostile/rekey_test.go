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

// rekeyLimit makes the server start a key exchange every 256 KiB.
const rekeyLimit = 256 << 10

// TestServerRekey runs against a server that rekeys every 256 KiB
// (the healthy session rekeys with it) and a client that answers the
// server's KEXINIT late: the server must keep its queues bounded while
// it waits, and the data must come through intact once the client
// answers.
func TestServerRekey(t *testing.T) {
	e := newEnv(t, func(c *sshd.Config) { c.RekeyLimit = rekeyLimit })
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
