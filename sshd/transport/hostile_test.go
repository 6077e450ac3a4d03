package transport

import (
	"bufio"
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/wire"
)

// rawClient speaks the cleartext part of the protocol by hand.
type rawClient struct {
	t  *testing.T
	nc net.Conn
	r  *packetReader
	w  *packetWriter
}

func dialRaw(t *testing.T, ts *testServer) *rawClient {
	nc, err := net.Dial("tcp", ts.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawClient{t: t, nc: nc, r: newPacketReader(nc), w: newPacketWriter(nc, [32]byte{})}
}

func (c *rawClient) version(v string) {
	if _, err := c.nc.Write([]byte(v)); err != nil {
		c.t.Fatal(err)
	}
	if _, err := readServerVersion(c.r.r); err != nil {
		c.t.Fatal(err)
	}
}

func readServerVersion(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	return strings.TrimSpace(line), err
}

func (c *rawClient) send(p []byte) {
	if err := c.w.write(p); err != nil {
		c.t.Fatal(err)
	}
}

// expectDisconnect reads until a DISCONNECT and checks its reason.
func (c *rawClient) expectDisconnect(reason uint32) {
	c.t.Helper()
	for {
		p, err := c.r.read()
		if err != nil {
			c.t.Fatalf("no DISCONNECT (reason %d) before %v", reason, err)
		}
		if p[0] == wire.MsgDisconnect {
			if got := wire.NewReader(p[1:]).Uint32("reason"); got != reason {
				c.t.Fatalf("DISCONNECT reason %d, want %d", got, reason)
			}
			return
		}
	}
}

// expect reads until a message of type want, skipping KEXINIT.
func (c *rawClient) expect(want byte) []byte {
	c.t.Helper()
	for {
		p, err := c.r.read()
		if err != nil {
			c.t.Fatalf("waiting for message %d: %v", want, err)
		}
		if p[0] == want {
			return p
		}
		if p[0] != wire.MsgKexInit {
			c.t.Fatalf("got message %d, want %d", p[0], want)
		}
	}
}

func clientKexInit(kex ...string) *kexInitMsg {
	all := SupportedCiphers()
	return &kexInitMsg{kex: kex, hostKey: []string{"ssh-ed25519"},
		ciphersCS: all, ciphersSC: all, macsCS: SupportedMACs(), macsSC: SupportedMACs(),
		compCS: []string{"none"}, compSC: []string{"none"}}
}

func x25519Init(t *testing.T) []byte {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return wire.AppendBytes([]byte{wire.MsgKexECDHInit}, k.PublicKey().Bytes())
}

func TestHostileVersion(t *testing.T) {
	ts := newTestServer(t, &Config{})
	for v, want := range map[string]string{
		"GET / HTTP/1.1\r\n":                    "Invalid SSH identification string.",
		"SSH-1.5-old\r\n":                       "Protocol version not supported: this server speaks SSH-2.0 only.",
		strings.Repeat("SSH-2.0-", 40) + "\r\n": "Invalid SSH identification string.",
	} {
		c := dialRaw(t, ts)
		c.version(v)
		// a line of text, not a DISCONNECT packet: the client speaks
		// no binary protocol yet (as OpenSSH's sshd answers)
		if line, err := c.r.r.ReadString('\n'); err != nil || line != want+"\r\n" {
			t.Errorf("after %q: %q, %v; want %q", v, line, err, want)
		}
	}
}

func TestStrictKexRejectsIgnoreBeforeKexInit(t *testing.T) {
	ts := newTestServer(t, &Config{})
	c := dialRaw(t, ts)
	c.version("SSH-2.0-raw\r\n")
	c.send([]byte{wire.MsgIgnore, 0, 0, 0, 0})
	c.send(clientKexInit("curve25519-sha256", strictKexClient).marshal())
	c.expectDisconnect(wire.DisconnectProtocolError)
}

func TestStrictKexRejectsIgnoreDuringKex(t *testing.T) {
	ts := newTestServer(t, &Config{})
	c := dialRaw(t, ts)
	c.version("SSH-2.0-raw\r\n")
	c.send(clientKexInit("curve25519-sha256", strictKexClient).marshal())
	c.send([]byte{wire.MsgIgnore, 0, 0, 0, 0})
	c.expectDisconnect(wire.DisconnectProtocolError)
}

func TestWithoutStrictKexIgnoreIsSkipped(t *testing.T) {
	ts := newTestServer(t, &Config{})
	c := dialRaw(t, ts)
	c.version("SSH-2.0-raw\r\n")
	c.send([]byte{wire.MsgIgnore, 0, 0, 0, 0})
	c.send(clientKexInit("curve25519-sha256").marshal())
	c.send([]byte{wire.MsgDebug, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	c.send(x25519Init(t))
	c.expect(wire.MsgKexECDHReply)
}

func TestWrongGuessIsIgnored(t *testing.T) {
	ts := newTestServer(t, &Config{})
	c := dialRaw(t, ts)
	c.version("SSH-2.0-raw\r\n")
	ki := clientKexInit("ecdh-sha2-nistp521", "curve25519-sha256")
	ki.firstKexPacketFollows = true
	c.send(ki.marshal())
	c.send(append([]byte{wire.MsgKexECDHInit}, make([]byte, 70)...)) // the wrong guess
	c.send(x25519Init(t))
	reply := c.expect(wire.MsgKexECDHReply)
	r := wire.NewReader(reply[1:])
	r.Bytes("K_S")
	if q := r.Bytes("Q_S"); len(q) != 32 || r.Err() != nil {
		t.Fatalf("reply Q_S %d bytes, err %v", len(q), r.Err())
	}
}

// TestGuessedKexPacket: RFC 4253 §7 calls a guess right only when both
// sides list the same key exchange first and the same host-key algorithm
// first. A right guess is answered; a wrong one is dropped (here it is a
// low-order point, which the server would refuse had it used it) and the
// client's next packet is answered, with and without strict kex.
func TestGuessedKexPacket(t *testing.T) {
	curveFirst := []string{"curve25519-sha256", "mlkem768x25519-sha256"}
	lowOrder := wire.AppendBytes([]byte{wire.MsgKexECDHInit}, make([]byte, 32))
	for _, tc := range []struct {
		name       string
		serverKex  []string
		clientKex  []string
		clientHost []string
		right      bool
	}{
		{"both-first-agree", curveFirst, []string{"curve25519-sha256"}, []string{"ssh-ed25519"}, true},
		{"kex-first-differs", nil, []string{"curve25519-sha256"}, []string{"ssh-ed25519"}, false},
		{"hostkey-first-differs", curveFirst, []string{"curve25519-sha256"}, []string{"ssh-rsa", "ssh-ed25519"}, false},
		{"empty-first-entry", curveFirst, []string{"", "curve25519-sha256"}, []string{"ssh-ed25519"}, true},
	} {
		for _, strict := range []bool{false, true} {
			name := tc.name
			if strict {
				name += "/strict"
			}
			t.Run(name, func(t *testing.T) {
				ts := newTestServer(t, &Config{KexAlgorithms: tc.serverKex, HostKeyAlgorithms: []string{"ssh-ed25519", "rsa-sha2-256"}})
				c := dialRaw(t, ts)
				c.version("SSH-2.0-raw\r\n")
				ki := clientKexInit(tc.clientKex...)
				ki.hostKey = tc.clientHost
				if strict {
					ki.kex = append(ki.kex, strictKexClient)
				}
				ki.firstKexPacketFollows = true
				c.send(ki.marshal())
				if tc.right {
					c.send(x25519Init(t))
				} else {
					c.send(lowOrder)
					c.send(x25519Init(t))
				}
				c.expect(wire.MsgKexECDHReply)
			})
		}
	}
}

func TestKexFailures(t *testing.T) {
	cases := map[string]func(c *rawClient){
		"no common kex": func(c *rawClient) {
			c.send(clientKexInit("diffie-hellman-group14-sha1").marshal())
			c.expectDisconnect(wire.DisconnectKeyExchangeFailed)
		},
		"no common cipher": func(c *rawClient) {
			ki := clientKexInit("curve25519-sha256")
			ki.ciphersCS = []string{"3des-cbc"}
			c.send(ki.marshal())
			c.expectDisconnect(wire.DisconnectKeyExchangeFailed)
		},
		"low-order x25519 point": func(c *rawClient) {
			c.send(clientKexInit("curve25519-sha256").marshal())
			c.send(wire.AppendBytes([]byte{wire.MsgKexECDHInit}, make([]byte, 32)))
			c.expectDisconnect(wire.DisconnectKeyExchangeFailed)
		},
		"short public value": func(c *rawClient) {
			c.send(clientKexInit("curve25519-sha256").marshal())
			c.send(wire.AppendBytes([]byte{wire.MsgKexECDHInit}, make([]byte, 5)))
			c.expectDisconnect(wire.DisconnectKeyExchangeFailed)
		},
		"service request during kex": func(c *rawClient) {
			c.send(clientKexInit("curve25519-sha256").marshal())
			c.send(wire.AppendString([]byte{wire.MsgServiceRequest}, "ssh-userauth"))
			c.expectDisconnect(wire.DisconnectProtocolError)
		},
		"malformed kexinit": func(c *rawClient) {
			c.send([]byte{wire.MsgKexInit, 1, 2, 3})
			c.expectDisconnect(wire.DisconnectProtocolError)
		},
		"newkeys first": func(c *rawClient) {
			c.send([]byte{wire.MsgNewKeys})
			c.expectDisconnect(wire.DisconnectProtocolError)
		},
	}
	ts := newTestServer(t, &Config{})
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, ts)
			c.version("SSH-2.0-raw\r\n")
			run(c)
		})
	}
	// The server keeps serving.
	cl, _ := ts.dial(t, clientConfig("", "", "", ""))
	if ok, _, err := cl.SendRequest("echo", true, nil); !ok || err != nil {
		t.Fatalf("server stopped serving: %v", err)
	}
}

// TestPeerDisconnectIsReported: a DISCONNECT from the client ends the
// connection with FromPeer set and no answer.
func TestPeerDisconnectIsReported(t *testing.T) {
	ts := newTestServer(t, &Config{})
	c := dialRaw(t, ts)
	c.version("SSH-2.0-raw\r\n")
	p := wire.AppendUint32([]byte{wire.MsgDisconnect}, wire.DisconnectByApplication)
	c.send(wire.AppendString(wire.AppendString(p, "bye\x1b[31m"), ""))
	ok := waitFor(func() bool {
		for _, err := range ts.connErrors() {
			var de *DisconnectError
			if errors.As(err, &de) && de.FromPeer && de.Reason == wire.DisconnectByApplication {
				return !bytes.Contains([]byte(de.Error()), []byte("\x1b"))
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("errors %v", ts.connErrors())
	}
}

// freezeConn stops delivering what the server sends once frozen.
type freezeConn struct {
	net.Conn
	frozen atomic.Bool
}

func (f *freezeConn) Read(p []byte) (int, error) {
	for f.frozen.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	return f.Conn.Read(p)
}

// TestRekeyTimeout: a client that never answers our KEXINIT is
// disconnected after KexTimeout, and writers blocked on the full queue
// are released with an error.
func TestRekeyTimeout(t *testing.T) {
	ts := newTestServer(t, &Config{KexTimeout: 300 * time.Millisecond})
	fc := &freezeConn{}
	ts.wrapNC = func(nc net.Conn) net.Conn { fc.Conn = nc; return fc }
	cl, _ := ts.dial(t, clientConfig("", "", "", ""))
	if ok, _, err := cl.SendRequest("echo", true, nil); !ok || err != nil {
		t.Fatal(err)
	}
	conn, err := ts.lastConn()
	if err != nil {
		t.Fatal(err)
	}
	fc.frozen.Store(true)
	defer fc.frozen.Store(false)
	conn.wmu.Lock()
	err = conn.sendKexInitLocked()
	conn.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		big := append([]byte{wire.MsgIgnore}, make([]byte, 100<<10)...)
		for {
			if err := conn.WritePacket(big); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("no error")
		}
	case <-testenv.Timeout(t):
		t.Fatal("writer still blocked after the kex timeout")
	}
	ok := waitFor(func() bool {
		for _, err := range ts.connErrors() {
			var de *DisconnectError
			if errors.As(err, &de) && de.Reason == wire.DisconnectKeyExchangeFailed && strings.Contains(de.Message, "not finished") {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("connection errors %v", ts.connErrors())
	}
}

// TestEmptyNamesIgnored: empty entries in a client's name-lists (",a",
// "a,,b", "a,") are skipped, in every list (the names after them still
// count, where OpenSSH 9.2 stops at the first empty name).
func TestEmptyNamesIgnored(t *testing.T) {
	ts := newTestServer(t, &Config{})
	c := dialRaw(t, ts)
	c.version("SSH-2.0-raw\r\n")
	ki := clientKexInit("", "curve25519-sha256", "", "unknown-kex@example.com", "")
	for _, l := range ki.lists() {
		*l.v = append(append([]string{""}, *l.v...), "", "")
	}
	c.send(ki.marshal())
	c.send(x25519Init(t))
	c.expect(wire.MsgKexECDHReply)
	c.expect(wire.MsgNewKeys)
}

func TestPeerNameList(t *testing.T) {
	for in, want := range map[string][]string{
		"":          nil,
		",":         {},
		"a":         {"a"},
		",a,,b,":    {"a", "b"},
		"a,b,c":     {"a", "b", "c"},
		",,,x,,,,,": {"x"},
	} {
		r := wire.NewReader(wire.AppendString(nil, in))
		got := peerNameList(r, "list")
		if r.Done() != nil || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%q: %q (%v), want %q", in, got, r.Err(), want)
		}
	}
}

// TestLibssh2OfferOnDefaults: libssh2 1.10 (curl, PHP's ssh2) offers CTR
// ciphers with the encrypt-and-MAC hmac-sha2-256/512 only; the default
// offer must meet it (it once said "no common MAC").
func TestLibssh2OfferOnDefaults(t *testing.T) {
	ts := newTestServer(t, &Config{})
	c := dialRaw(t, ts)
	c.version("SSH-2.0-libssh2_1.10.0\r\n")
	ki := clientKexInit("curve25519-sha256", "ecdh-sha2-nistp256", "diffie-hellman-group14-sha256")
	ki.ciphersCS = []string{"aes128-ctr", "aes192-ctr", "aes256-ctr", "aes256-cbc"}
	ki.ciphersSC = ki.ciphersCS
	ki.macsCS = []string{"hmac-sha2-256", "hmac-sha2-512", "hmac-sha1"}
	ki.macsSC = ki.macsCS
	c.send(ki.marshal())
	c.send(x25519Init(t))
	c.expect(wire.MsgKexECDHReply)
}

// TestMeasuredSelectionServer: a measured server's first KEXINIT follows
// the KEXINIT of a client known to send its own first and lists only fast
// ciphers the client accepts; any other client gets the full KEXINIT at
// once (the server's wait is set to an hour, longer than the client's
// read deadline, so a waiting server fails the test), and its first
// re-exchange is the one steered.
func TestMeasuredSelectionServer(t *testing.T) {
	ts := newTestServer(t, &Config{CipherSelection: SelectionMeasured, CipherScores: map[string]float64{
		"chacha20-poly1305@openssh.com": 1000, "aes128-gcm@openssh.com": 2000, "aes256-gcm@openssh.com": 1900}},
		func(s *Server) { s.kexInitWait = time.Hour })
	c := dialRaw(t, ts)
	c.version("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
	ki := clientKexInit("curve25519-sha256")
	ki.ciphersCS = []string{"chacha20-poly1305@openssh.com", "aes128-gcm@openssh.com", "aes128-ctr"}
	ki.ciphersSC = ki.ciphersCS
	c.send(ki.marshal())
	si, err := parseKexInit(bytes.Clone(c.expect(wire.MsgKexInit)))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"aes128-gcm@openssh.com"}; !slices.Equal(si.ciphersCS, want) || !slices.Equal(si.ciphersSC, want) {
		t.Errorf("server offers %v / %v, want the measured %v", si.ciphersCS, si.ciphersSC, want)
	}
	// A client that waits for the server's KEXINIT.
	w := dialRaw(t, ts)
	w.version("SSH-2.0-waits\r\n")
	full, err := parseKexInit(w.expect(wire.MsgKexInit))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(full.ciphersCS, ts.srv.offer.ciphers) {
		t.Errorf("KEXINIT to an unknown client lists %v, want the full %v", full.ciphersCS, ts.srv.offer.ciphers)
	}
	w.send(clientKexInit("curve25519-sha256").marshal())
	w.send(x25519Init(t))
	w.expect(wire.MsgKexECDHReply)
}

// TestMeasuredSelectionPerDirection: a measured offer is chosen per
// direction from the client's list for that direction: steered where the
// client lists a faster cipher, the full offer where it lists only one.
func TestMeasuredSelectionPerDirection(t *testing.T) {
	ts := newTestServer(t, &Config{CipherSelection: SelectionMeasured, CipherScores: map[string]float64{
		"chacha20-poly1305@openssh.com": 1000, "aes128-gcm@openssh.com": 2000}})
	c := dialRaw(t, ts)
	c.version("SSH-2.0-Go\r\n")
	ki := clientKexInit("curve25519-sha256")
	ki.ciphersCS = []string{"chacha20-poly1305@openssh.com", "aes128-gcm@openssh.com"}
	ki.ciphersSC = []string{"chacha20-poly1305@openssh.com"}
	c.send(ki.marshal())
	si, err := parseKexInit(bytes.Clone(c.expect(wire.MsgKexInit)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(si.ciphersCS, ki.ciphersCS[1:]) || !slices.Equal(si.ciphersSC, ts.srv.offer.ciphers) {
		t.Fatalf("server offers %v / %v for client lists %v / %v", si.ciphersCS, si.ciphersSC, ki.ciphersCS, ki.ciphersSC)
	}
	c.send(x25519Init(t))
	c.expect(wire.MsgKexECDHReply)
}
