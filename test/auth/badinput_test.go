package auth_test

import (
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/wire"
	"github.com/offload/offload/test/hostile/rawclient"
)

// Bad keyboard-interactive input sent to the real offload sshd, where the
// pre-auth worker parses it and the monitor decides: a response to no
// prompt, more responses than prompts, a response over
// auth.MaxResponseLen, a thousand responses and a response that is not
// UTF-8 each get a clear answer — a disconnect, or a failure for the
// text that is not UTF-8 — within seconds, never a hang; and a password
// change request nobody asked for fails.
func TestBadInputDaemon(t *testing.T) {
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-bad-1")
	d := startOffloadDaemon(t, f, nil, nil, "KbdInteractiveAuthentication yes", "PasswordAuthentication yes", "UsePAM no")
	kbdInt := rawclient.AuthRequest(u.Username, "keyboard-interactive", wire.AppendString(wire.AppendString(nil, ""), ""))
	responses := func(rs ...string) []byte {
		b := wire.AppendUint32([]byte{61}, uint32(len(rs))) // SSH_MSG_USERAUTH_INFO_RESPONSE
		for _, r := range rs {
			b = wire.AppendString(b, r)
		}
		return b
	}
	cases := []struct {
		name     string
		asked    bool   // start a keyboard-interactive round first
		send     []byte // then this
		failure  bool   // a USERAUTH_FAILURE, else a disconnect
		password bool
	}{
		{"response to no prompt", false, responses("x"), false, false},
		{"too many responses", true, responses("a", "b"), false, false},
		{"huge response", true, responses(strings.Repeat("x", auth.MaxResponseLen+1)), false, false},
		{"a thousand responses", true, responses(make([]string, 1000)...), false, false},
		{"not UTF-8", true, responses("pw-bad-1\xff\xfe"), true, false},
		{"password change not asked for", false, rawclient.AuthRequest(u.Username, "password",
			wire.AppendString(wire.AppendString(wire.AppendBool(nil, true), "pw-bad-1"), "new-pw")), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := rawclient.Dial("127.0.0.1:" + d.port)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			rc.SetDeadline(time.Now().Add(20 * time.Second)) // a hang fails, it does not block
			if err := rc.Handshake(nil); err != nil {
				t.Fatal(err)
			}
			if err := rc.RequestService("ssh-userauth"); err != nil {
				t.Fatal(err)
			}
			if tc.asked {
				rc.WritePacket(kbdInt)
				if _, err := rc.Expect(60); err != nil { // SSH_MSG_USERAUTH_INFO_REQUEST
					t.Fatalf("info request: %v", err)
				}
			}
			rc.WritePacket(tc.send)
			p, err := rc.Next()
			if tc.failure {
				if err != nil || p[0] != wire.MsgUserAuthFailure {
					t.Fatalf("answer %v, %v; want a failure", p, err)
				}
				return
			}
			de, ok := err.(*rawclient.DisconnectError)
			if !ok || de.Reason != wire.DisconnectProtocolError {
				t.Fatalf("answer %v, %v; want a protocol-error disconnect", p, err)
			}
			t.Logf("disconnect: %v", de)
		})
	}
}
