package hostile

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/offload/offload/sshd/transport"
	"github.com/offload/offload/sshd/wire"
	"github.com/offload/offload/test/hostile/rawclient"
)

// kexStep is how far a key exchange has got when a case interferes.
type kexStep int

const (
	beforeKexInit kexStep = iota // after the version exchange
	afterKexInit                 // KEXINITs exchanged
	afterReply                   // ECDH reply received, NEWKEYS not sent
)

// kexUpTo runs the first key exchange up to step.
func kexUpTo(t *testing.T, rc *rawclient.Conn, o *rawclient.KexOptions, step kexStep) {
	t.Helper()
	if step == beforeKexInit {
		return
	}
	if err := rc.SendKexInit(o); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.ReadKexInit(); err != nil {
		t.Fatal(err)
	}
	if step == afterKexInit {
		return
	}
	if err := rc.SendECDHInit(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ReadECDHReply(); err != nil {
		t.Fatal(err)
	}
}

// kexInitWith returns the KEXINIT payload p with name-list field
// replaced by list.
func kexInitWith(p []byte, field int, list []string) []byte {
	r := wire.NewReader(p[17:])
	lists := make([][]string, 10)
	for i := range lists {
		lists[i] = r.NameList("list")
	}
	lists[field] = list
	out := bytes.Clone(p[:17])
	for _, l := range lists {
		out = wire.AppendNameList(out, l)
	}
	return append(out, r.Rest()...)
}

var serviceRequest = wire.AppendString([]byte{wire.MsgServiceRequest}, "ssh-userauth")

// TestKeyExchange sends messages the key exchange must refuse.
func TestKeyExchange(t *testing.T) {
	e := newEnv(t, nil)
	e.run("server-offers-strict-kex", func(t *testing.T) {
		rc := e.versioned(t)
		if _, err := rc.ReadKexInit(); err != nil {
			t.Fatal(err)
		}
		ki, err := rawclient.ParseKexInit(rc.ServerKexInit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ki.Kex, rawclient.StrictServer) {
			t.Errorf("server KEXINIT does not offer %s (Terrapin, CVE-2023-48795): %v", rawclient.StrictServer, ki.Kex)
		}
		for _, nist := range []string{"ecdh-sha2-nistp256", "ecdh-sha2-nistp384", "ecdh-sha2-nistp521"} {
			if slices.Contains(ki.Kex, nist) {
				t.Errorf("default offer contains %s", nist)
			}
		}
	})
	wrong := []struct {
		name string
		step kexStep
		msg  []byte
	}{
		{"service-request-before-kexinit", beforeKexInit, serviceRequest},
		{"userauth-before-kexinit", beforeKexInit, rawclient.PasswordRequest("root", "x")},
		{"newkeys-before-kexinit", beforeKexInit, []byte{wire.MsgNewKeys}},
		{"newkeys-before-ecdh-init", afterKexInit, []byte{wire.MsgNewKeys}},
		{"ecdh-reply-from-client", afterKexInit, wire.AppendBytes([]byte{wire.MsgKexECDHReply}, make([]byte, 32))},
		{"short-ecdh-init", afterKexInit, wire.AppendBytes([]byte{wire.MsgKexECDHInit}, make([]byte, 31))},
		{"service-request-before-newkeys", afterReply, serviceRequest},
		{"kexinit-before-newkeys", afterReply, []byte{wire.MsgKexInit}},
		{"channel-open-before-newkeys", afterReply, wire.AppendString([]byte{wire.MsgChannelOpen}, "session")},
	}
	for _, c := range wrong {
		e.run(c.name, func(t *testing.T) {
			rc := e.versioned(t)
			kexUpTo(t, rc, nil, c.step)
			if err := rc.WritePacket(c.msg); err != nil {
				t.Fatal(err)
			}
			expectDisconnect(t, rc, wire.DisconnectProtocolError, wire.DisconnectKeyExchangeFailed)
		})
	}
	// RFC 8308 §2.4: EXT_INFO is the next packet after the server's first
	// NEWKEYS, so it arrives before the client's NEWKEYS is even sent.
	e.run("ext-info-right-after-newkeys", func(t *testing.T) {
		rc := e.versioned(t)
		kexUpTo(t, rc, nil, afterReply)
		if err := rc.ReadNewKeys(); err != nil {
			t.Fatal(err)
		}
		p, err := rc.ReadPacket()
		if err != nil {
			t.Fatalf("no packet after NEWKEYS before the client's NEWKEYS: %v", err)
		}
		if p[0] != wire.MsgExtInfo {
			t.Fatalf("packet after NEWKEYS is message %d, want EXT_INFO", p[0])
		}
		if !bytes.Contains(p, []byte("server-sig-algs")) {
			t.Errorf("EXT_INFO without server-sig-algs: %q", p)
		}
	})
	// During a re-exchange the client's connection-layer messages are
	// accepted as OpenSSH's sshd accepts them (asyncssh keeps sending
	// after its KEXINIT); the server's answers wait until NEWKEYS.
	e.run("userauth-during-rekey", func(t *testing.T) {
		rc := e.keyed(t, nil)
		if err := rc.RequestService("ssh-userauth"); err != nil {
			t.Fatal(err)
		}
		kexUpTo(t, rc, nil, afterKexInit)
		if err := rc.WritePacket(rawclient.AuthRequest(e.srv.User, "none", nil)); err != nil {
			t.Fatal(err)
		}
		finishRekey(t, rc, afterKexInit)
		if _, err := rc.Expect(wire.MsgUserAuthFailure); err != nil {
			t.Fatalf("the userauth request sent during the rekey: %v", err)
		}
	})
	for _, step := range []kexStep{afterKexInit, afterReply} {
		e.run(fmt.Sprintf("channel-data-during-rekey/step-%d", step), func(t *testing.T) {
			rc := e.loggedIn(t)
			ch := catSession(t, rc)
			kexUpTo(t, rc, nil, step)
			if err := ch.Send([]byte("sent during the rekey")); err != nil {
				t.Fatal(err)
			}
			finishRekey(t, rc, step)
			if err := ch.Send([]byte(", and after")); err != nil {
				t.Fatal(err)
			}
			echo := readEcho(t, rc, len("sent during the rekey, and after"))
			if echo != "sent during the rekey, and after" {
				t.Errorf("echo %q", echo)
			}
		})
	}
	for _, c := range []struct {
		name  string
		field int // index of the name-list in KEXINIT
		list  []string
	}{
		{"no-common-kex", 0, []string{"diffie-hellman-group1-sha1"}},
		{"no-common-hostkey", 1, []string{"ssh-dss", "ssh-rsa"}},
		{"no-common-cipher", 2, []string{"3des-cbc", "aes128-cbc", "arcfour"}},
		{"no-common-mac", 4, []string{"hmac-ripemd160", "hmac-sha2-384"}}, // the harness offers every MAC offload has
		{"no-common-compression", 6, []string{"zlib"}},
		{"empty-kex-list", 0, nil},
	} {
		e.run(c.name, func(t *testing.T) {
			rc := e.versioned(t)
			o := &rawclient.KexOptions{Cipher: rawclient.AES128CTR}
			rc.WritePacket(kexInitWith(rc.KexInitPayload(o), c.field, c.list))
			expectDisconnect(t, rc, wire.DisconnectKeyExchangeFailed)
		})
	}
	e.run("kex-message-outside-kex", func(t *testing.T) {
		rc := e.keyed(t, nil)
		rc.WritePacket(wire.AppendBytes([]byte{wire.MsgKexECDHInit}, make([]byte, 32)))
		expectDisconnect(t, rc, wire.DisconnectProtocolError)
	})
}

// TestStrictKex checks kex-strict-c-v00@openssh.com: during the initial
// exchange only kex messages are allowed, and the KEXINIT must be first.
func TestStrictKex(t *testing.T) {
	e := newEnv(t, nil)
	ignore := ignoreMsg(16)
	debug := append(wire.AppendBool([]byte{wire.MsgDebug}, false), wire.AppendString(wire.AppendString(nil, "x"), "")...)
	unimpl := wire.AppendUint32([]byte{wire.MsgUnimplemented}, 0)
	violations := []struct {
		name string
		step kexStep
		msg  []byte
	}{
		{"ignore-before-kexinit", beforeKexInit, ignore},
		{"debug-before-kexinit", beforeKexInit, debug},
		{"ignore-after-kexinit", afterKexInit, ignore},
		{"unimplemented-after-kexinit", afterKexInit, unimpl},
		{"ignore-before-newkeys", afterReply, ignore},
	}
	for _, v := range violations {
		e.run(v.name, func(t *testing.T) {
			rc := e.versioned(t)
			switch v.step {
			case beforeKexInit:
				rc.WritePacket(v.msg)
				kexUpTo(t, rc, nil, afterKexInit)
				// Keep going as a Terrapin attacker would; the server
				// must refuse when it sees the exchange.
				rc.SendECDHInit()
			case afterKexInit:
				kexUpTo(t, rc, nil, afterKexInit)
				rc.WritePacket(v.msg)
				rc.SendECDHInit()
			case afterReply:
				kexUpTo(t, rc, nil, afterReply)
				rc.WritePacket(v.msg)
			}
			expectDisconnect(t, rc, wire.DisconnectProtocolError)
		})
	}
	// Strict kex restarts sequence numbers at NEWKEYS: a client that
	// announces it but keeps counting fails the MAC of its next packet
	// under the ciphers whose MAC covers the sequence number (AES-GCM
	// keeps its own invocation counter and does not notice).
	for _, su := range suites[1:] {
		e.run("sequence-not-reset/"+su.name, func(t *testing.T) {
			rc := e.dial(t)
			o := su.opts
			o.NoSeqReset = true
			if err := rc.Handshake(&o); err != nil {
				t.Fatalf("handshake: %v", err)
			}
			rc.WritePacket(serviceRequest)
			expectDisconnect(t, rc, wire.DisconnectMACError, wire.DisconnectProtocolError)
		})
	}
	// Without strict kex the same IGNOREs are legal: the refusal above is
	// the strict-kex rule, not a general one.
	e.run("ignore-allowed-without-strict", func(t *testing.T) {
		rc := e.versioned(t)
		o := &rawclient.KexOptions{NoStrict: true}
		rc.WritePacket(ignore)
		if err := rc.SendKexInit(o); err != nil {
			t.Fatal(err)
		}
		rc.WritePacket(ignore)
		if _, err := rc.ReadKexInit(); err != nil {
			t.Fatal(err)
		}
		if err := rc.SendECDHInit(); err != nil {
			t.Fatal(err)
		}
		if err := rc.ReadECDHReply(); err != nil {
			t.Fatal(err)
		}
		rc.WritePacket(ignore)
		if err := rc.SendNewKeys(); err != nil {
			t.Fatal(err)
		}
		if err := rc.ReadNewKeys(); err != nil {
			t.Fatalf("non-strict handshake with IGNOREs: %v", err)
		}
		if rc.Strict {
			t.Error("strict kex negotiated although the client did not offer it")
		}
		if err := rc.RequestService("ssh-userauth"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestKexFloods floods the key exchange.
func TestKexFloods(t *testing.T) {
	e := newEnv(t, nil)
	e.run("kexinit-flood-initial", func(t *testing.T) {
		rc := e.versioned(t)
		p := rc.KexInitPayload(nil)
		var flood []byte
		for range 200 {
			flood = append(flood, rc.Seal(rawclient.Packet(p, rc.Padding(len(p))))...)
		}
		go rc.WriteRaw(flood)
		expectClosedWithReason(t, rc, wire.DisconnectProtocolError)
	})
	e.run("kexinit-flood-after-kex", func(t *testing.T) {
		rc := e.keyed(t, nil)
		p := rc.KexInitPayload(nil)
		var flood []byte
		for range 200 {
			flood = append(flood, rc.Seal(rawclient.Packet(p, rc.Padding(len(p))))...)
		}
		go rc.WriteRaw(flood)
		expectClosedWithReason(t, rc, wire.DisconnectProtocolError)
	})
	e.run("rekey-under-traffic", func(t *testing.T) { rekeyUnderTraffic(t, e) })
	e.run("rekey-flood", func(t *testing.T) {
		rc := e.keyed(t, nil)
		const n = 500
		start := time.Now()
		for i := range n {
			if err := rc.Rekey(nil); err != nil {
				// Refusing a flood is allowed; it must say so.
				var d *rawclient.DisconnectError
				t.Logf("server stopped the rekey flood after %d exchanges: %v (%T)", i, err, d)
				return
			}
		}
		t.Logf("server completed %d client rekeys in %v (no rate limit)", n, time.Since(start).Round(time.Millisecond))
		if e.stream != nil {
			if err := rc.AuthPublicKey(e.srv.User, e.srv.Signer); err != nil {
				t.Fatalf("login after the rekey flood: %v", err)
			}
		}
	})
}

// finishRekey completes a client rekey that kexUpTo took to step.
func finishRekey(t *testing.T, rc *rawclient.Conn, step kexStep) {
	t.Helper()
	steps := []func() error{rc.SendECDHInit, rc.ReadECDHReply, rc.SendNewKeys, rc.ReadNewKeys}
	if step == afterReply {
		steps = steps[2:]
	}
	for _, f := range steps {
		if err := f(); err != nil {
			t.Fatalf("finishing the rekey: %v", err)
		}
	}
}

// catSession opens a session running cat.
func catSession(t *testing.T, rc *rawclient.Conn) *rawclient.Channel {
	t.Helper()
	ch, err := rc.OpenSession(0, 1<<24)
	if err != nil {
		t.Fatal(err)
	}
	// SHLVL=1: see harness.NewSession.
	if err := ch.Request("env", true, wire.AppendString(wire.AppendString(nil, "SHLVL"), "1")); err != nil {
		t.Fatal(err)
	}
	if err := ch.Exec("cat"); err != nil {
		t.Fatal(err)
	}
	return ch
}

// readEcho collects n bytes of channel data.
func readEcho(t *testing.T, rc *rawclient.Conn, n int) string {
	t.Helper()
	var got []byte
	for len(got) < n {
		m, err := rc.Next()
		if err != nil {
			t.Fatalf("after %d of %d bytes echoed: %v", len(got), n, err)
		}
		if m[0] == wire.MsgChannelData {
			got = append(got, wire.NewReader(m[5:]).Bytes("data")...)
		}
	}
	return string(got)
}

// rekeyUnderTraffic runs `cat` on a session and starts a key exchange
// after every chunk it sends: the echo must come back intact. The
// rounds are the client's burst of re-exchanges after authentication;
// beyond it each would wait up to a second (transport.ClientRekeyBurst).
func rekeyUnderTraffic(t *testing.T, e *env) {
	rc := e.loggedIn(t)
	ch := catSession(t, rc)
	const rounds, chunk = transport.ClientRekeyBurst, 4096
	sent, got := sha256.New(), sha256.New()
	var echoed int
	collect := func(msgs ...[]byte) {
		for _, m := range msgs {
			if m[0] == wire.MsgChannelData {
				d := wire.NewReader(m[5:]).Bytes("data")
				got.Write(d)
				echoed += len(d)
			}
		}
	}
	buf := make([]byte, chunk)
	for i := range rounds {
		rand.Read(buf)
		sent.Write(buf)
		if err := ch.Send(buf); err != nil {
			t.Fatal(err)
		}
		skipped, err := rekeyCollect(rc)
		collect(skipped...)
		if err != nil {
			t.Fatalf("rekey %d: %v", i, err)
		}
	}
	rc.WritePacket(wire.AppendUint32([]byte{wire.MsgChannelEOF}, ch.Remote))
	for echoed < rounds*chunk {
		m, err := rc.Next()
		if err != nil {
			t.Fatalf("after %d of %d bytes echoed: %v", echoed, rounds*chunk, err)
		}
		collect(m)
	}
	if !bytes.Equal(sent.Sum(nil), got.Sum(nil)) {
		t.Errorf("echo through %d rekeys differs from what was sent", rounds)
	}
	t.Logf("%d bytes echoed intact through %d client rekeys (kex count %d)", echoed, rounds, rc.KexCount)
}

// rekeyCollect runs one client rekey and returns the messages that
// arrived before the server's KEXINIT.
func rekeyCollect(rc *rawclient.Conn) ([][]byte, error) {
	if err := rc.SendKexInit(nil); err != nil {
		return nil, err
	}
	skipped, err := rc.ReadKexInit()
	if err != nil {
		return skipped, err
	}
	for _, step := range []func() error{rc.SendECDHInit, rc.ReadECDHReply, rc.SendNewKeys, rc.ReadNewKeys} {
		if err := step(); err != nil {
			return skipped, err
		}
	}
	return skipped, nil
}

// expectClosedWithReason is expectDisconnect for floods: the server may
// reset the connection (unread flood data turns its FIN into an RST)
// before its DISCONNECT can be read, which is logged, not failed.
func expectClosedWithReason(t *testing.T, rc *rawclient.Conn, reason uint32) {
	t.Helper()
	d, err := rc.ReadDisconnect(replyTimeout)
	switch {
	case d != nil && d.Reason != reason:
		t.Errorf("DISCONNECT reason %d (%q), want %d", d.Reason, d.Message, reason)
	case d != nil:
		t.Logf("server: DISCONNECT %d %q", d.Reason, d.Message)
	case isTimeout(err):
		t.Errorf("server kept the connection open for %v", replyTimeout)
	default:
		t.Logf("connection ended without a readable DISCONNECT: %v", err)
	}
}
