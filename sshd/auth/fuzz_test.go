package auth

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// encodeRequest is the inverse of parseUserAuthRequest for the methods
// it decodes.
func encodeRequest(r *Request) []byte {
	b := wire.AppendString([]byte{wire.MsgUserAuthRequest}, r.NameSent()) // "user:style" as sent
	b = wire.AppendString(wire.AppendString(b, r.Service), r.Method)
	switch r.Method {
	case "publickey":
		b = wire.AppendBool(b, r.HasSig)
		b = wire.AppendBytes(wire.AppendString(b, r.Algo), r.KeyBlob)
		if r.HasSig {
			b = wire.AppendBytes(b, r.Sig)
		}
	case "password":
		b = wire.AppendString(wire.AppendBool(b, r.ChangePassword), r.Password)
	}
	return b
}

func FuzzParseUserAuthRequest(f *testing.F) {
	c := &testClient{user: "alice"}
	f.Add(c.header("none"))
	f.Add(wire.AppendString(wire.AppendBool(c.header("password"), false), "pw"))
	q := wire.AppendString(wire.AppendBool(c.header("publickey"), true), "ssh-ed25519")
	f.Add(wire.AppendBytes(wire.AppendBytes(q, []byte("blob")), []byte("sig")))
	f.Add(wire.AppendString(c.header("keyboard-interactive"), ""))
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := parseUserAuthRequest(p)
		if err != nil {
			return
		}
		if len(r.User) > maxUserLen || len(r.KeyBlob) > maxKeyBlobLen || len(r.Sig) > maxSigLen {
			t.Fatalf("bounds not enforced: %+v", r)
		}
		if r.Method == "none" || r.Method == "publickey" || (r.Method == "password" && !r.ChangePassword) {
			if got := encodeRequest(r); !bytes.Equal(got, normalizeBools(p, r)) {
				t.Fatalf("round trip:\n in %x\nout %x", p, got)
			}
		}
		validUserName(r.User)
		sig, err := parseSignature(r.Sig)
		if key, kerr := ssh.ParsePublicKey(r.KeyBlob); err == nil && kerr == nil && isSKKey(key) {
			verifySK(key, p, sig)
		}
	})
}

// normalizeBools maps the boolean byte of p to 0/1 (any non-zero byte
// decodes as true).
func normalizeBools(p []byte, r *Request) []byte {
	if r.Method == "none" {
		return p
	}
	q := append([]byte(nil), p...)
	// the name as sent: a "user:style" name is longer than r.User
	i := 1 + 12 + len(r.NameSent()) + len(r.Service) + len(r.Method)
	if q[i] != 0 {
		q[i] = 1
	}
	return q
}

func FuzzAuthorizedKeysLine(f *testing.F) {
	f.Add(`restrict,pty,command="echo \"x\"",from="10.0.0.0/8,!10.1.*" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBpcZF9lq8Op0NRbbyvtnQdsSrC6WqW5Jbi3ctoNQkNk c`)
	f.Add(`expiry-time="20991231Z",permitopen="[::1]:22",environment="A=b" ssh-ed25519 AAAA`)
	f.Add(`permitlisten="8080",permitlisten="[::1]:*",no-pty ssh-ed25519 AAAA`)
	f.Add(`cert-authority,principals="a,b" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBpcZF9lq8Op0NRbbyvtnQdsSrC6WqW5Jbi3ctoNQkNk`)
	f.Fuzz(func(t *testing.T, line string) {
		if l, err := parseAuthorizedKeysLine([]byte(line)); err == nil && l != nil {
			l.opts.allows(netip.MustParseAddr("192.0.2.1"), timeNowForFuzz)
			l.opts.permissions("u", true)
		}
		parsePrincipalsLine(line)
		if o, err := parseOptions(splitOptionList(line)); err == nil {
			o.permissions("u", false)
		}
	})
}

// FuzzConversation feeds arbitrary messages (separated by "|") to Run:
// it must end without panicking or hanging.
func FuzzConversation(f *testing.F) {
	c := &testClient{t: f, user: "alice", sid: testSessionID}
	svc := wire.AppendString([]byte{wire.MsgServiceRequest}, "ssh-userauth")
	f.Add(bytes.Join([][]byte{svc, c.header("none"), c.header("password")}, []byte("|")))
	w := newWorld(f)
	key := newSKSigner(f, skECDSA, flagUserPresent)
	w.authorize(authLine("restrict,from=\"192.0.2.0/24\"", key.PublicKey()))
	f.Add(bytes.Join([][]byte{svc, c.signedRequest(skECDSA, key, key.PublicKey())}, []byte("|")))
	f.Add(bytes.Join([][]byte{svc, wire.AppendString(wire.AppendBool(c.header("publickey"), false), "ssh-ed25519")}, []byte("|")))
	w.cfg.Logger = slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, script []byte) {
		server, client := memPipe(testSessionID)
		done := make(chan struct{})
		go func() {
			Run(context.Background(), server, w.cfg, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 22})
			close(done)
		}()
		go func() { // drain answers so that Run never blocks on a full pipe
			for {
				if _, err := client.ReadPacket(); err != nil {
					return
				}
			}
		}()
		for _, p := range bytes.Split(script, []byte("|")) {
			if client.WritePacket(p) != nil {
				break
			}
		}
		client.Close()
		<-done
	})
}

var timeNowForFuzz = mustTime("20250101")

func mustTime(s string) (t time.Time) {
	t, _ = parseExpiry(s)
	return t
}
