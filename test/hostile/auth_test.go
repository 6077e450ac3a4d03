package hostile

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/wire"
	"github.com/offload/offload/test/hostile/rawclient"
)

// maxAuthTries is the hostile server's MaxAuthTries.
const maxAuthTries = 4

// TestRSASHA1Refused authorizes an RSA key and logs in with it: a SHA-1
// ("ssh-rsa") signature must be refused, rsa-sha2-256 accepted.
func TestRSASHA1Refused(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := ssh.NewSignerFromSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *sshd.Config) {
		path := filepath.Join(t.TempDir(), "authorized_keys")
		if err := os.WriteFile(path, ssh.MarshalAuthorizedKey(rsaKey.PublicKey()), 0o600); err != nil {
			t.Fatal(err)
		}
		a := *c.Auth
		a.AuthorizedKeysFiles = append([]string{path}, a.AuthorizedKeysFiles...)
		c.Auth = &a
	})
	login := func(t *testing.T, algo string) error {
		rc := e.keyed(t, nil)
		if err := rc.RequestService("ssh-userauth"); err != nil {
			t.Fatal(err)
		}
		req, err := rc.PublicKeyRequestAlgo(e.srv.User, rsaKey, algo)
		if err != nil {
			t.Fatal(err)
		}
		rc.WritePacket(req)
		p, err := rc.Next()
		if err != nil {
			return err
		}
		if p[0] != wire.MsgUserAuthSuccess {
			return fmt.Errorf("message %d", p[0])
		}
		return nil
	}
	e.run("ssh-rsa-sha1", func(t *testing.T) {
		if err := login(t, ssh.KeyAlgoRSA); err == nil {
			t.Error("RSA/SHA-1 signature accepted")
		} else {
			t.Logf("refused: %v", err)
		}
	})
	e.run("rsa-sha2-256", func(t *testing.T) {
		if err := login(t, ssh.KeyAlgoRSASHA256); err != nil {
			t.Errorf("rsa-sha2-256 refused: %v", err)
		}
	})
}

func strangerKey(t *testing.T) ssh.Signer {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pkQuery is a publickey request without signature (RFC 4252 §7).
func pkQuery(user string, key ssh.PublicKey) []byte {
	f := wire.AppendBool(nil, false)
	f = wire.AppendString(f, key.Type())
	f = wire.AppendBytes(f, key.Marshal())
	return rawclient.AuthRequest(user, "publickey", f)
}

// TestAuthFloods sends more authentication requests than the server
// allows, pipelined without waiting for answers.
func TestAuthFloods(t *testing.T) {
	e := newEnv(t, func(c *sshd.Config) {
		a := *c.Auth
		a.MaxAuthTries = maxAuthTries
		c.Auth = &a
	})
	user := e.srv.User
	stranger := strangerKey(t)
	floods := []struct {
		name string
		n    int
		req  func(rc *rawclient.Conn) []byte
	}{
		{"password-when-off", 3 * maxAuthTries, func(*rawclient.Conn) []byte { return rawclient.PasswordRequest(user, "hunter2") }},
		{"none", 3 * maxAuthTries, func(*rawclient.Conn) []byte { return rawclient.AuthRequest(user, "none", nil) }},
		{"unknown-method", 3 * maxAuthTries, func(*rawclient.Conn) []byte {
			return rawclient.AuthRequest(user, "keyboard-interactive", wire.AppendString(wire.AppendString(nil, ""), ""))
		}},
		{"unauthorized-signed-key", 3 * maxAuthTries, func(rc *rawclient.Conn) []byte {
			p, err := rc.PublicKeyRequest(user, stranger)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"unauthorized-key-queries", 3 * maxAuthTries, func(*rawclient.Conn) []byte { return pkQuery(user, stranger.PublicKey()) }},
		// Queries for the right key are answered with PK_OK and are not
		// failures; the server still caps requests of every kind.
		{"pk-ok-queries", 20 * maxAuthTries, func(*rawclient.Conn) []byte { return pkQuery(user, e.srv.Signer.PublicKey()) }},
		{"unknown-user", 3 * maxAuthTries, func(*rawclient.Conn) []byte { return rawclient.PasswordRequest("no-such-user-offload", "x") }},
	}
	for _, f := range floods {
		e.run(f.name, func(t *testing.T) {
			rc := e.keyed(t, nil)
			if err := rc.RequestService("ssh-userauth"); err != nil {
				t.Fatal(err)
			}
			var batch []byte
			for range f.n {
				p := f.req(rc)
				batch = append(batch, rc.Seal(rawclient.Packet(p, rc.Padding(len(p))))...)
			}
			go rc.WriteRaw(batch)
			expectClosedWithReason(t, rc, wire.DisconnectNoMoreAuthMethodsAvailable)
		})
	}
	e.run("user-change", func(t *testing.T) {
		rc := e.keyed(t, nil)
		if err := rc.RequestService("ssh-userauth"); err != nil {
			t.Fatal(err)
		}
		rc.WritePacket(rawclient.AuthRequest(user, "none", nil))
		rc.WritePacket(rawclient.AuthRequest("root2", "none", nil))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
	e.run("malformed-request", func(t *testing.T) {
		rc := e.keyed(t, nil)
		if err := rc.RequestService("ssh-userauth"); err != nil {
			t.Fatal(err)
		}
		rc.WritePacket(append(rawclient.AuthRequest(user, "publickey", nil), 1, 0, 0, 0xff, 0xff))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
	e.run("wrong-service", func(t *testing.T) {
		rc := e.keyed(t, nil)
		rc.WritePacket(wire.AppendString([]byte{wire.MsgServiceRequest}, "ssh-connection"))
		expectDisconnect(t, rc, wire.DisconnectServiceNotAvailable)
	})
	e.run("channel-open-before-auth", func(t *testing.T) {
		rc := e.keyed(t, nil)
		if err := rc.RequestService("ssh-userauth"); err != nil {
			t.Fatal(err)
		}
		open := wire.AppendString([]byte{wire.MsgChannelOpen}, "session")
		rc.WritePacket(wire.AppendUint32(wire.AppendUint32(wire.AppendUint32(open, 0), 1<<20), 32768))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
	e.run("nul-in-user-name", func(t *testing.T) {
		rc := e.keyed(t, nil)
		if err := rc.RequestService("ssh-userauth"); err != nil {
			t.Fatal(err)
		}
		rc.WritePacket(rawclient.AuthRequest("ro\x00ot", "none", nil))
		expectDisconnect(t, rc, wire.DisconnectIllegalUserName)
	})
}
