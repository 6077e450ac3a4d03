package auth

import (
	"crypto/rand"
	"net"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// testClient speaks the client side of RFC 4252 with sshd/wire and
// x/crypto/ssh signers.
type testClient struct {
	t       testing.TB
	pc      *memConn
	user    string
	sid     []byte // session identifier the client signs
	banners []string
}

// result is what Run returned.
type result struct {
	perms *perm.Permissions
	err   error
}

var testSessionID = []byte("0123456789abcdef0123456789abcdef")

// startRun runs Run against a new client with remote 192.0.2.10:2222.
func startRun(t *testing.T, cfg *Config) (*testClient, <-chan result) {
	return startRunFrom(t, cfg, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 2222})
}

func startRunFrom(t *testing.T, cfg *Config, remote net.Addr) (*testClient, <-chan result) {
	t.Helper()
	server, client := memPipe(testSessionID)
	ch := make(chan result, 1)
	ctx, cancel := testenv.Context(t)
	go func() {
		p, err := Run(ctx, server, cfg, remote)
		ch <- result{p, err}
	}()
	t.Cleanup(func() { cancel(); server.Close(); client.Close() })
	return &testClient{t: t, pc: client, user: "alice", sid: testSessionID}, ch
}

func (c *testClient) write(b []byte) {
	c.t.Helper()
	if err := c.pc.WritePacket(b); err != nil {
		c.t.Fatalf("client write: %v", err)
	}
}

// read returns the next message that is not a banner.
func (c *testClient) read() []byte {
	c.t.Helper()
	for {
		p, err := c.pc.ReadPacket()
		if err != nil {
			c.t.Fatalf("client read: %v", err)
		}
		if len(p) > 0 && p[0] == wire.MsgUserAuthBanner {
			r := wire.NewReader(p[1:])
			c.banners = append(c.banners, r.String("banner"))
			continue
		}
		return p
	}
}

// startService sends SERVICE_REQUEST ssh-userauth and expects ACCEPT.
func (c *testClient) startService() {
	c.t.Helper()
	c.write(wire.AppendString([]byte{wire.MsgServiceRequest}, "ssh-userauth"))
	p := c.read()
	r := wire.NewReader(p)
	if r.Byte("msg") != wire.MsgServiceAccept || r.String("name") != "ssh-userauth" || r.Done() != nil {
		c.t.Fatalf("want SERVICE_ACCEPT ssh-userauth, got %x", p)
	}
}

func (c *testClient) header(method string) []byte {
	b := []byte{wire.MsgUserAuthRequest}
	b = wire.AppendString(b, c.user)
	b = wire.AppendString(b, "ssh-connection")
	return wire.AppendString(b, method)
}

func (c *testClient) none() []byte {
	c.write(c.header("none"))
	return c.read()
}

func (c *testClient) password(pw string) []byte {
	b := wire.AppendBool(c.header("password"), false)
	c.write(wire.AppendString(b, pw))
	return c.read()
}

// query sends a publickey request without signature.
func (c *testClient) query(algo string, pub ssh.PublicKey) []byte {
	b := wire.AppendBool(c.header("publickey"), false)
	b = wire.AppendString(b, algo)
	c.write(wire.AppendBytes(b, pub.Marshal()))
	return c.read()
}

// signed sends a signed publickey request for signer's key (or cert).
func (c *testClient) signed(algo string, signer ssh.Signer) []byte {
	c.t.Helper()
	c.write(c.signedRequest(algo, signer, signer.PublicKey()))
	return c.read()
}

func (c *testClient) signedRequest(algo string, signer ssh.Signer, pub ssh.PublicKey) []byte {
	c.t.Helper()
	b := wire.AppendBool(c.header("publickey"), true)
	b = wire.AppendString(b, algo)
	b = wire.AppendBytes(b, pub.Marshal())
	data := wire.AppendBytes(nil, c.sid)
	data = append(data, b...)
	sig := c.sign(signer, data, algo)
	return wire.AppendBytes(b, ssh.Marshal(sig))
}

func (c *testClient) sign(signer ssh.Signer, data []byte, algo string) *ssh.Signature {
	c.t.Helper()
	var sig *ssh.Signature
	var err error
	if as, ok := signer.(ssh.AlgorithmSigner); ok {
		sig, err = as.SignWithAlgorithm(rand.Reader, data, sigAlgo(algo))
	} else {
		sig, err = signer.Sign(rand.Reader, data)
	}
	if err != nil {
		c.t.Fatalf("sign: %v", err)
	}
	return sig
}

// sigAlgo is the signature algorithm for a public key algorithm name.
func sigAlgo(algo string) string {
	if a, ok := algorithms[algo]; ok {
		return a.sigFormat
	}
	return algo
}

// wantMsg fails unless p is message number n.
func wantMsg(t testing.TB, p []byte, n byte, what string) {
	t.Helper()
	if len(p) == 0 || p[0] != n {
		t.Fatalf("%s: want message %d, got %x", what, n, p)
	}
}

// wantFailure checks a USERAUTH_FAILURE and its method list.
func wantFailure(t testing.TB, p []byte, methods string) {
	t.Helper()
	wantMsg(t, p, wire.MsgUserAuthFailure, "failure")
	r := wire.NewReader(p[1:])
	got := r.String("methods")
	if partial := r.Bool("partial"); r.Done() != nil || partial || got != methods {
		t.Fatalf("failure: methods %q partial %v (err %v), want %q", got, partial, r.Err(), methods)
	}
}

// wantResult waits for Run's result.
func wantResult(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-testenv.Timeout(t):
		t.Fatal("Run did not return")
	}
	return result{}
}

// wantSuccess expects USERAUTH_SUCCESS and Run's permissions.
func wantSuccess(t *testing.T, p []byte, ch <-chan result) *perm.Permissions {
	t.Helper()
	wantMsg(t, p, wire.MsgUserAuthSuccess, "success")
	r := wantResult(t, ch)
	if r.err != nil || r.perms == nil {
		t.Fatalf("Run: %v, %v", r.perms, r.err)
	}
	return r.perms
}
