package hostile

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/wire"
	"github.com/offload/offload/test/hostile/harness"
	"github.com/offload/offload/test/hostile/rawclient"
)

// Phases FuzzServer can start its messages in.
const (
	phasePreAuth  = iota // after the first key exchange
	phasePostAuth        // logged in
	phaseChannel         // logged in, one session channel open
	phases
)

// fuzzServer is a server safe to fuzz as root: the key is restricted to
// the command "true" (every exec, shell and subsystem runs that), no
// forwarding, no pty, no subsystems, no environment but SHLVL (see
// harness.NewSession).
func fuzzServer(f testing.TB) *harness.Server {
	return harness.Start(f, func(c *sshd.Config) {
		path := filepath.Join(f.TempDir(), "authorized_keys")
		line := `restrict,command="true" ` + string(ssh.MarshalAuthorizedKey(harness.ClientKey(f).PublicKey()))
		if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
			f.Fatal(err)
		}
		a := *c.Auth
		a.AuthorizedKeysFiles = []string{path}
		c.Auth = &a
		c.Conn = &connection.Config{AllowTCPForwarding: connection.ForwardNone, Subsystems: map[string]string{}, AcceptEnv: []string{"SHLVL"}}
		c.LoginGraceTime = 10 * time.Second
		c.MaxStartups = -1
	})
}

// splitMessages cuts in into payloads, each prefixed by a 2-byte length.
func splitMessages(in []byte) [][]byte {
	var out [][]byte
	for len(in) >= 2 && len(out) < 16 {
		n := int(binary.BigEndian.Uint16(in))
		in = in[2:]
		n = min(n, len(in))
		if n > 0 {
			out = append(out, in[:n])
		}
		in = in[n:]
	}
	return out
}

func joinMessages(msgs ...[]byte) []byte {
	var b []byte
	for _, m := range msgs {
		b = binary.BigEndian.AppendUint16(b, uint16(len(m)))
		b = append(b, m...)
	}
	return b
}

// FuzzServer sends arbitrary messages through the whole server (glue,
// transport, auth, connection layer) in one of three phases, then asks
// for a reply: the server must answer, or disconnect, and never panic.
func FuzzServer(f *testing.F) {
	srv := fuzzServer(f)
	req := func(name string) []byte {
		return wire.AppendBool(wire.AppendString([]byte{wire.MsgChannelRequest, 0, 0, 0, 0}, name), true)
	}
	seeds := [][]byte{
		joinMessages(rawclient.AuthRequest("root", "none", nil)),
		joinMessages(wire.AppendString([]byte{wire.MsgServiceRequest}, "ssh-userauth")),
		joinMessages(rawclient.DataPacket(0, []byte("hello")), rawclient.WindowAdjustPacket(0, 1000)),
		joinMessages(wire.AppendString(req("exec"), "id"), []byte{wire.MsgChannelEOF, 0, 0, 0, 0}),
		joinMessages(req("shell"), []byte{wire.MsgChannelClose, 0, 0, 0, 0}),
		joinMessages(wire.AppendString(wire.AppendString(req("env"), "A"), "b")),
		joinMessages(wire.AppendString(req("subsystem"), "sftp")),
		joinMessages(wire.AppendBool(wire.AppendString([]byte{wire.MsgGlobalRequest}, "tcpip-forward"), true)),
		joinMessages([]byte{wire.MsgKexInit}, []byte{wire.MsgNewKeys}),
	}
	for _, s := range seeds {
		for p := range phases {
			f.Add(byte(p), s)
		}
	}
	f.Fuzz(func(t *testing.T, phase byte, in []byte) {
		before := srv.Log.Panics()
		rc := fuzzConn(t, srv, int(phase)%phases)
		defer rc.Close()
		for _, m := range splitMessages(in) {
			if rc.WritePacket(m) != nil {
				break
			}
		}
		if !probe(t, rc) {
			// The connection ended: give the server the moment it
			// needs to log a recovered panic (it closes first).
			time.Sleep(20 * time.Millisecond)
		}
		if srv.Log.Panics() > before {
			t.Fatalf("server panicked:\n%s", srv.Log.String())
		}
	})
}

// fuzzConn dials and reaches phase.
func fuzzConn(t *testing.T, srv *harness.Server, phase int) *rawclient.Conn {
	rc, err := rawclient.Dial(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	rc.SetDeadline(time.Now().Add(30 * time.Second))
	if err := rc.Handshake(nil); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if phase == phasePreAuth {
		return rc
	}
	if err := rc.AuthPublicKey(srv.User, srv.Signer); err != nil {
		t.Fatalf("login: %v", err)
	}
	if phase == phaseChannel {
		if _, err := rc.OpenSession(0, 1<<20); err != nil {
			t.Fatalf("open session: %v", err)
		}
	}
	return rc
}

// probe sends a global request and waits for its answer (true) or the
// end of the connection (false); a server that does neither within the
// deadline hangs.
func probe(t *testing.T, rc *rawclient.Conn) bool {
	rc.WritePacket(wire.AppendBool(wire.AppendString([]byte{wire.MsgGlobalRequest}, "probe@offload"), true))
	rc.SetDeadline(time.Now().Add(10 * time.Second))
	for {
		p, err := rc.ReadPacket()
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatal("server neither answered nor disconnected within 10s")
		case err != nil:
			return false // closed, reset, or the keys changed under us: an end
		case p[0] == wire.MsgDisconnect:
			return false
		case p[0] == wire.MsgRequestSuccess || p[0] == wire.MsgRequestFailure:
			return true
		}
	}
}

// TestFuzzServerRestricted proves that the fuzzed server runs nothing
// but "true" and forwards nothing, before FuzzServer sends it random
// requests as root.
func TestFuzzServerRestricted(t *testing.T) {
	srv := fuzzServer(t)
	c, err := srv.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, cmd := range []string{"echo pwned", ""} {
		s, err := harness.NewSession(c)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		if cmd == "" {
			err = s.RequestSubsystem("sftp")
		} else {
			out, err = s.Output(cmd)
		}
		s.Close()
		if len(out) != 0 {
			t.Errorf("%q ran: output %q", cmd, out)
		}
		t.Logf("%q: %v", cmd, err)
	}
	if nc, err := c.Dial("tcp", srv.Addr); err == nil {
		nc.Close()
		t.Error("direct-tcpip allowed")
	}
}
