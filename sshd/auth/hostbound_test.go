package auth

import (
	"context"
	"crypto/rand"
	"net"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/wire"
)

// hostBoundRequest is a publickey-hostbound-v00@openssh.com request for
// key naming hostKey, signed over the data OpenSSH's client signs (the
// method's own name and the host key after the user key) when sign is
// set; signedHostKey, when not nil, is the host key the signature covers
// instead.
func hostBoundRequest(t *testing.T, key ssh.Signer, hostKey, signedHostKey []byte, sign bool) []byte {
	t.Helper()
	head := wire.AppendString([]byte{wire.MsgUserAuthRequest}, "alice")
	head = wire.AppendString(head, "ssh-connection")
	head = wire.AppendString(head, methodHostBound)
	body := func(hk []byte, hasSig bool) []byte {
		b := wire.AppendBool(nil, hasSig)
		b = wire.AppendString(b, key.PublicKey().Type())
		b = wire.AppendBytes(b, key.PublicKey().Marshal())
		return wire.AppendBytes(b, hk)
	}
	p := append(append([]byte(nil), head...), body(hostKey, sign)...)
	if !sign {
		return p
	}
	if signedHostKey == nil {
		signedHostKey = hostKey
	}
	data := append(wire.AppendBytes(nil, testSessionID), head...)
	sig, err := key.Sign(rand.Reader, append(data, body(signedHostKey, true)...))
	if err != nil {
		t.Fatal(err)
	}
	return wire.AppendBytes(p, ssh.Marshal(sig))
}

// TestHostBound: publickey-hostbound-v00@openssh.com succeeds with the
// connection's host key (or a certificate of it) named and signed over,
// and fails with another host key, a signature over another host key,
// or an Authority that was not told the host key; a query gets PK_OK.
func TestHostBound(t *testing.T) {
	hostKey, other := newEd25519(t), newEd25519(t)
	hk, otherHK := hostKey.PublicKey().Marshal(), other.PublicKey().Marshal()
	cert := &ssh.Certificate{Key: hostKey.PublicKey(), CertType: ssh.HostCert, ValidPrincipals: []string{"host"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, other); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		bound     []byte // the Authority's host key
		named     []byte
		signedFor []byte
		sign      bool
		want      Verdict
	}{
		{"query", hk, hk, nil, false, KeyOK},
		{"signed", hk, hk, nil, true, Success},
		{"certificate-of-the-host-key", hk, cert.Marshal(), nil, true, Success},
		{"kex-signed-with-a-certificate", cert.Marshal(), hk, nil, true, Success},
		{"other-host-key", hk, otherHK, nil, true, Failure},
		{"signature-over-other-host-key", hk, hk, otherHK, true, Failure},
		{"no-host-key-known", nil, hk, nil, true, Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			key := newEd25519(t)
			w.authorize(authLine("", key.PublicKey()))
			a, err := NewConnAuthority(w.cfg, ConnInfo{SessionID: testSessionID, HostKey: tc.bound, Remote: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 2222}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := a.Begin(ctx, "alice", "ssh-connection"); err != nil {
				t.Fatal(err)
			}
			req, err := parseUserAuthRequest(hostBoundRequest(t, key, tc.named, tc.signedFor, tc.sign))
			if err != nil {
				t.Fatal(err)
			}
			d, err := a.Decide(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != tc.want {
				t.Fatalf("verdict %v, want %v\n%s", d.Verdict, tc.want, w.logs)
			}
			if d.Verdict == Success && d.Perms.Method != methodPublicKey {
				t.Errorf("method %q, want publickey", d.Perms.Method)
			}
		})
	}
}

// TestHostBoundCountsAsPublicKey: AuthenticationMethods "publickey" is
// satisfied by a host-bound request, as in OpenSSH.
func TestHostBoundCountsAsPublicKey(t *testing.T) {
	hk := newEd25519(t).PublicKey().Marshal()
	w := newWorld(t)
	key := newEd25519(t)
	w.authorize(authLine("", key.PublicKey()))
	w.cfg.AuthenticationMethods = [][]string{{"publickey"}}
	a, err := NewConnAuthority(w.cfg, ConnInfo{SessionID: testSessionID, HostKey: hk, Remote: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 2222}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.Begin(ctx, "alice", "ssh-connection"); err != nil {
		t.Fatal(err)
	}
	req, err := parseUserAuthRequest(hostBoundRequest(t, key, hk, nil, true))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := a.Decide(ctx, req); err != nil || d.Verdict != Success {
		t.Fatalf("decision %+v, %v\n%s", d, err, w.logs)
	}
}

// TestHostBoundParse: the fields are read in the request's order and
// exactly: bytes after the signature are refused.
func TestHostBoundParse(t *testing.T) {
	key, hk := newEd25519(t), newEd25519(t).PublicKey().Marshal()
	p := hostBoundRequest(t, key, hk, nil, true)
	req, err := parseUserAuthRequest(p)
	if err != nil || string(req.HostKey) != string(hk) || !req.HasSig || len(req.Sig) == 0 {
		t.Fatalf("parsed %+v, %v", req, err)
	}
	if _, err := parseUserAuthRequest(append(p, 0)); err == nil {
		t.Fatal("a trailing byte was accepted")
	}
	if _, err := parseUserAuthRequest(p[:len(p)-1]); err == nil {
		t.Fatal("a truncated request was accepted")
	}
}

// FuzzHostBoundRequest: the fields of a host-bound request from the
// client, after its method name, are parsed within bounds and exactly.
func FuzzHostBoundRequest(f *testing.F) {
	head := wire.AppendString([]byte{wire.MsgUserAuthRequest}, "alice")
	head = wire.AppendString(head, "ssh-connection")
	head = wire.AppendString(head, methodHostBound)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(wire.AppendBytes(wire.AppendBytes(wire.AppendString([]byte{1}, "ssh-ed25519"), []byte("key")), []byte("host")))
	f.Fuzz(func(t *testing.T, rest []byte) {
		req, err := parseUserAuthRequest(append(append([]byte(nil), head...), rest...))
		if err != nil {
			return
		}
		if len(req.HostKey) > maxKeyBlobLen || len(req.KeyBlob) > maxKeyBlobLen || len(req.Sig) > maxSigLen {
			t.Fatalf("over-long field accepted: %d %d %d", len(req.HostKey), len(req.KeyBlob), len(req.Sig))
		}
		if !req.HasSig && req.Sig != nil {
			t.Fatal("a signature without has-signature")
		}
	})
}
