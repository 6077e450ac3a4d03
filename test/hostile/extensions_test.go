package hostile

import (
	"bytes"
	"testing"

	"github.com/offload/offload/sshd/wire"
)

const (
	msgPing = 192
	msgPong = 193
)

// TestPing: ping@openssh.com is announced in EXT_INFO; after login a PING
// gets a PONG with its data, before login it gets nothing (as OpenSSH:
// "Won't reply to PING in preauth").
func TestPing(t *testing.T) {
	e := newEnv(t, nil)
	ping := wire.AppendBytes([]byte{msgPing}, []byte("are you there"))
	e.run("announced", func(t *testing.T) {
		rc := e.versioned(t)
		kexUpTo(t, rc, nil, afterReply)
		if err := rc.ReadNewKeys(); err != nil {
			t.Fatal(err)
		}
		p, err := rc.ReadPacket()
		if err != nil || p[0] != wire.MsgExtInfo || !bytes.Contains(p, []byte("ping@openssh.com")) {
			t.Fatalf("EXT_INFO %q, %v: no ping@openssh.com", p, err)
		}
	})
	e.run("after-login", func(t *testing.T) {
		rc := e.loggedIn(t)
		if err := rc.WritePacket(ping); err != nil {
			t.Fatal(err)
		}
		p, err := rc.Expect(msgPong)
		if err != nil || !bytes.Equal(wire.NewReader(p[1:]).Bytes("data"), []byte("are you there")) {
			t.Fatalf("PONG %q, %v", p, err)
		}
	})
	e.run("before-login", func(t *testing.T) {
		rc := e.keyed(t, nil)
		if err := rc.WritePacket(ping); err != nil {
			t.Fatal(err)
		}
		if err := rc.RequestService("ssh-userauth"); err != nil {
			t.Fatalf("after a pre-auth PING: %v (a PONG would come first)", err)
		}
	})
}
