package transport

import (
	"bytes"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

func proveConn(t testing.TB) *Conn {
	srv, err := NewServer(&Config{Registry: testRegistry(t), HostKeys: allHostKeys(t)})
	if err != nil {
		t.Fatal(err)
	}
	return &Conn{srv: srv, signer: srv.signer, sessionID: bytes.Repeat([]byte{7}, 32)}
}

// TestProveHostKeys: each proof verifies over the hostkeys-prove data;
// a key the server does not hold, a malformed list and too many keys are
// refused.
func TestProveHostKeys(t *testing.T) {
	c := proveConn(t)
	var req []byte
	for _, k := range c.srv.allHostKeys {
		req = wire.AppendBytes(req, k)
	}
	out, err := c.ProveHostKeys(req)
	if err != nil {
		t.Fatal(err)
	}
	r := wire.NewReader(out)
	for _, k := range c.srv.allHostKeys {
		pub, _ := ssh.ParsePublicKey(k)
		var sig ssh.Signature
		if err := ssh.Unmarshal(r.Bytes("sig"), &sig); err != nil {
			t.Fatal(err)
		}
		if err := pub.Verify(hostKeyProofData(k, c.sessionID), &sig); err != nil {
			t.Errorf("%s proof: %v", pub.Type(), err)
		}
		if pub.Type() == ssh.KeyAlgoRSA && sig.Format != ssh.KeyAlgoRSASHA512 {
			t.Errorf("RSA proof made with %s", sig.Format)
		}
	}
	foreign := wire.AppendBytes(nil, append(bytes.Clone(c.srv.allHostKeys[0]), 0))
	var many []byte
	for range maxProveKeys + 1 {
		many = wire.AppendBytes(many, c.srv.allHostKeys[0])
	}
	for name, bad := range map[string][]byte{"foreign key": foreign, "truncated": req[:len(req)-1], "too many": many} {
		if _, err := c.ProveHostKeys(bad); err == nil {
			t.Errorf("%s: proved", name)
		}
	}
}

func TestHostKeysAnnouncement(t *testing.T) {
	c := proveConn(t)
	r := wire.NewReader(c.HostKeysAnnouncement()[1:])
	if r.String("name") != HostKeysRequest || r.Bool("want reply") {
		t.Fatal("not a hostkeys-00 request without reply")
	}
	n := 0
	for r.Len() > 0 {
		if _, err := ssh.ParsePublicKey(r.Bytes("key")); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(allHostKeys(t)) {
		t.Errorf("%d keys announced, want %d", n, len(allHostKeys(t)))
	}
}

// FuzzProveHostKeys feeds hostile hostkeys-prove request data.
func FuzzProveHostKeys(f *testing.F) {
	c := proveConn(f)
	f.Add(wire.AppendBytes(nil, c.srv.allHostKeys[0]))
	f.Add([]byte{0, 0, 0, 5, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		c.ProveHostKeys(in)
	})
}
