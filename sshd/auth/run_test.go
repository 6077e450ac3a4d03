package auth

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/wire"
)

func TestNoneListsMethods(t *testing.T) {
	w := newWorld(t)
	c, ch := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.none(), "publickey")
	wantFailure(t, c.none(), "publickey")
	select {
	case r := <-ch:
		t.Fatalf("Run returned after none: %v %v", r.perms, r.err)
	default:
	}

	w.cfg.PasswordAuthentication = true
	w.cfg.PasswordCallback = func(string, string) (bool, error) { return true, nil }
	c, _ = startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.none(), "publickey,password")
}

func TestPublicKeyQueryThenSign(t *testing.T) {
	for _, tc := range []struct {
		algo   string
		signer func(*testing.T) ssh.Signer
	}{
		{"ssh-ed25519", newEd25519},
		{"rsa-sha2-256", rsaSigner},
		{"rsa-sha2-512", rsaSigner},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			w := newWorld(t)
			key := tc.signer(t)
			w.authorize("# a comment", "", authLine("", key.PublicKey()))
			c, ch := startRun(t, w.cfg)
			c.startService()
			p := c.query(tc.algo, key.PublicKey())
			wantPKOK(t, p, tc.algo, key.PublicKey())
			select {
			case r := <-ch:
				t.Fatalf("PK_OK ended Run: %v %v", r.perms, r.err)
			case <-time.After(20 * time.Millisecond):
			}
			perms := wantSuccess(t, c.signed(tc.algo, key), ch)
			if perms.User != "alice" || perms.Method != "publickey" || perms.KeyFingerprint != ssh.FingerprintSHA256(key.PublicKey()) {
				t.Fatalf("permissions %+v", perms)
			}
			if perms.NoPTY || perms.ForceCommand != "" {
				t.Fatalf("unrestricted key got restrictions: %+v", perms)
			}
		})
	}
}

func wantPKOK(t *testing.T, p []byte, algo string, pub ssh.PublicKey) {
	t.Helper()
	wantMsg(t, p, wire.MsgUserAuthPKOK, "PK_OK")
	r := wire.NewReader(p[1:])
	if a, blob := r.String("algo"), r.Bytes("blob"); r.Done() != nil || a != algo || !bytes.Equal(blob, pub.Marshal()) {
		t.Fatalf("PK_OK for %q %x (err %v)", a, blob, r.Err())
	}
}

func TestPKOKIsNotAuthentication(t *testing.T) {
	w := newWorld(t)
	key, other := newEd25519(t), newEd25519(t)
	w.authorize(authLine("", key.PublicKey()))
	c, ch := startRun(t, w.cfg)
	c.startService()
	wantPKOK(t, c.query("ssh-ed25519", key.PublicKey()), "ssh-ed25519", key.PublicKey())
	wantFailure(t, c.none(), "publickey")
	// A signed request for the queried key made by another key's signer.
	c.write(c.signedRequest("ssh-ed25519", other, key.PublicKey()))
	wantFailure(t, c.read(), "publickey")
	wantSuccess(t, c.signed("ssh-ed25519", key), ch)
}

// TestSignedAfterQueryReusesAnswer: the signed request that follows a
// query for the same key takes the query's answer instead of reading the
// authorized_keys files again (a key removed in between still logs in,
// once); a signed request with no query before it, or for another key,
// reads them.
func TestSignedAfterQueryReusesAnswer(t *testing.T) {
	w := newWorld(t)
	key, other := newEd25519(t), newEd25519(t)
	w.authorize(authLine("", key.PublicKey()), authLine("", other.PublicKey()))
	c, ch := startRun(t, w.cfg)
	c.startService()
	wantPKOK(t, c.query("ssh-ed25519", key.PublicKey()), "ssh-ed25519", key.PublicKey())
	w.authorize(authLine("", newEd25519(t).PublicKey()))
	wantSuccess(t, c.signed("ssh-ed25519", key), ch)

	c, _ = startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
	w.authorize(authLine("", key.PublicKey()))
	wantPKOK(t, c.query("ssh-ed25519", key.PublicKey()), "ssh-ed25519", key.PublicKey())
	w.authorize(authLine("", newEd25519(t).PublicKey()))
	wantFailure(t, c.signed("ssh-ed25519", other), "publickey")
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey") // the answer was for one request
}

func TestUnknownKeyQueryFails(t *testing.T) {
	w := newWorld(t)
	key := newEd25519(t)
	w.authorize(authLine("", newEd25519(t).PublicKey()))
	c, _ := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.query("ssh-ed25519", key.PublicKey()), "publickey")
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
}

func TestSignatureOverWrongSessionID(t *testing.T) {
	w := newWorld(t)
	key := newEd25519(t)
	w.authorize(authLine("", key.PublicKey()))
	c, ch := startRun(t, w.cfg)
	c.startService()
	c.sid = []byte("another session")
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
	c.sid = testSessionID
	wantSuccess(t, c.signed("ssh-ed25519", key), ch)
}

// TestSignatureTrailingBytes: a signature blob is parsed exactly; an
// ed25519 signature with bytes after it is refused, as x/crypto's client
// and OpenSSH refuse it.
func TestSignatureTrailingBytes(t *testing.T) {
	w := newWorld(t)
	key := newEd25519(t)
	w.authorize(authLine("", key.PublicKey()))
	c, ch := startRun(t, w.cfg)
	c.startService()
	b := wire.AppendBool(c.header("publickey"), true)
	b = wire.AppendString(b, "ssh-ed25519")
	b = wire.AppendBytes(b, key.PublicKey().Marshal())
	sig := c.sign(key, append(wire.AppendBytes(nil, c.sid), b...), "ssh-ed25519")
	sig.Rest = []byte{0, 0, 0, 0}
	c.write(wire.AppendBytes(b, ssh.Marshal(sig)))
	wantFailure(t, c.read(), "publickey")
	if !w.logged("trailing bytes") {
		t.Errorf("log lacks the cause:\n%s", w.logs)
	}
	wantSuccess(t, c.signed("ssh-ed25519", key), ch)
}

func TestSignatureAlgorithmMustMatch(t *testing.T) {
	w := newWorld(t)
	key := rsaSigner(t)
	w.authorize(authLine("", key.PublicKey()))
	c, _ := startRun(t, w.cfg)
	c.startService()
	// Claims rsa-sha2-256 but signs with rsa-sha2-512.
	b := wire.AppendBool(c.header("publickey"), true)
	b = wire.AppendString(b, "rsa-sha2-256")
	b = wire.AppendBytes(b, key.PublicKey().Marshal())
	data := append(wire.AppendBytes(nil, c.sid), b...)
	sig := c.sign(key, data, "rsa-sha2-512")
	c.write(wire.AppendBytes(b, ssh.Marshal(sig)))
	wantFailure(t, c.read(), "publickey")
	// Algorithm name for another key type.
	wantFailure(t, c.query("ssh-ed25519", key.PublicKey()), "publickey")
	if !w.logged("does not match algorithm") || !w.logged("signature format") {
		t.Fatalf("log lacks the causes:\n%s", w.logs)
	}
}

func TestSSHRSASHA1RefusedByDefault(t *testing.T) {
	w := newWorld(t)
	key := rsaSigner(t)
	w.authorize(authLine("", key.PublicKey()))
	c, _ := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.query("ssh-rsa", key.PublicKey()), "publickey")
	wantFailure(t, c.signed("ssh-rsa", key), "publickey")

	w.cfg.PublicKeyAlgorithms = []string{"ssh-rsa"}
	c, ch := startRun(t, w.cfg)
	c.startService()
	wantSuccess(t, c.signed("ssh-rsa", key), ch)
}

func TestSmallRSAKeyRefused(t *testing.T) {
	t.Setenv("GODEBUG", "rsa1024min=0")
	if _, err := parseKeyForTest(t, 512); err == nil {
		t.Fatal("512-bit RSA key accepted")
	}
}

// TestRequiredRSASize: a 2048-bit key is refused under RequiredRSASize
// 3072, for a user key and for a certificate's CA, and accepted under
// the default.
func TestRequiredRSASize(t *testing.T) {
	key := rsaSigner(t) // 2048 bits
	for _, required := range []int{0, 3072} {
		w := newWorld(t)
		w.authorize(authLine("", key.PublicKey()))
		w.cfg.RequiredRSASize = required
		c, ch := startRun(t, w.cfg)
		c.startService()
		if required == 0 {
			wantSuccess(t, c.signed("rsa-sha2-256", key), ch)
			continue
		}
		wantFailure(t, c.signed("rsa-sha2-256", key), "publickey")
		if !w.logged("RSA key of 2048 bits, at least 3072 required") {
			t.Fatalf("log lacks the cause:\n%s", w.logs)
		}
	}
}

func TestValidUserName(t *testing.T) {
	for name, want := range map[string]bool{
		"alice": true, "Ålice.b-c_d": true, "a@b": true, "": false, "-oProxyCommand=x": false,
		".": false, "..": false, "a/b": false, "a:b": false, "a\x00": false, "a\nb": false,
		"\xff": false, strings.Repeat("a", maxUserLen): true, strings.Repeat("a", maxUserLen+1): false,
	} {
		if got := validUserName(name); got != want {
			t.Errorf("validUserName(%q) = %v", name, got)
		}
	}
}

func TestPasswordForRefusedUsers(t *testing.T) {
	for _, name := range []string{"mallory", "bob"} {
		w := newWorld(t)
		w.cfg.OnlyUser = "alice"
		w.cfg.PasswordAuthentication = true
		called := false
		w.cfg.PasswordCallback = func(string, string) (bool, error) { called = true; return true, nil }
		c, _ := startRun(t, w.cfg)
		c.user = name
		c.startService()
		wantFailure(t, c.password("any"), "publickey,password")
		if called {
			t.Fatalf("%s: password callback asked for a refused user", name)
		}
	}
}

func TestUnknownUser(t *testing.T) {
	w := newWorld(t)
	key := newEd25519(t)
	w.authorize(authLine("", key.PublicKey()))
	c, ch := startRun(t, w.cfg)
	c.user = "mallory"
	c.startService()
	wantFailure(t, c.query("ssh-ed25519", key.PublicKey()), "publickey")
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
	if !w.logged("invalid user") {
		t.Fatalf("log lacks invalid user:\n%s", w.logs)
	}
	c.pc.Close()
	wantResult(t, ch)
	// as OpenSSH names a client that goes away: fail2ban's ddos and
	// aggressive modes read these lines
	if want := "Connection closed by invalid user mallory 192.0.2.10 port 2222 [preauth]"; !w.logged(want) {
		t.Fatalf("log lacks %q:\n%s", want, w.logs)
	}
}

// A known user who goes away is an "authenticating user".
func TestClosedByAuthenticatingUser(t *testing.T) {
	w := newWorld(t)
	key := newEd25519(t)
	c, ch := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
	c.pc.Close()
	wantResult(t, ch)
	if want := "Connection closed by authenticating user alice 192.0.2.10 port 2222 [preauth]"; !w.logged(want) {
		t.Fatalf("log lacks %q:\n%s", want, w.logs)
	}
}

func TestOnlyUserAndAllowUsers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		onlyUser  string
		allow     []string
		user      string
		wantLogin bool
	}{
		{"only-user other", "alice", nil, "bob", false},
		{"only-user same", "alice", nil, "alice", true},
		{"allow-users miss", "", []string{"al?x", "carol"}, "alice", false},
		{"allow-users wildcard", "", []string{"carol", "a*"}, "alice", true},
		{"allow-users host match", "", []string{"alice@192.0.2.0/24"}, "alice", true},
		{"allow-users host miss", "", []string{"alice@198.51.100.*"}, "alice", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			key := newEd25519(t)
			w.authorize(authLine("", key.PublicKey()))
			w.cfg.OnlyUser, w.cfg.AllowUsers = tc.onlyUser, tc.allow
			c, ch := startRun(t, w.cfg)
			c.user = tc.user
			c.startService()
			p := c.signed("ssh-ed25519", key)
			if tc.wantLogin {
				wantSuccess(t, p, ch)
			} else {
				wantFailure(t, p, "publickey")
			}
		})
	}
}

func TestMaxAuthTries(t *testing.T) {
	for _, tries := range []int{0, 2} {
		w := newWorld(t)
		w.cfg.MaxAuthTries = tries
		want := tries
		if want == 0 {
			want = DefaultMaxAuthTries
		}
		key := newEd25519(t)
		c, ch := startRun(t, w.cfg)
		c.startService()
		wantFailure(t, c.none(), "publickey") // the first none is free
		wantFailure(t, c.none(), "publickey") // the second counts
		for i := 2; i < want; i++ {
			wantFailure(t, c.query("ssh-ed25519", key.PublicKey()), "publickey")
		}
		wantDisconnect(t, c.query("ssh-ed25519", key.PublicKey()), wire.DisconnectNoMoreAuthMethodsAvailable)
		r := wantResult(t, ch)
		var de *DisconnectError
		if !errors.As(r.err, &de) || !errors.Is(r.err, ErrTooManyFailures) || !de.Sent ||
			de.Reason != wire.DisconnectNoMoreAuthMethodsAvailable {
			t.Fatalf("MaxAuthTries %d: Run error %v", tries, r.err)
		}
	}
}

func TestTooManyRequests(t *testing.T) {
	w := newWorld(t)
	w.cfg.MaxAuthTries = 1
	key := newEd25519(t)
	w.authorize(authLine("", key.PublicKey()))
	c, ch := startRun(t, w.cfg)
	c.startService()
	for range 10 {
		wantPKOK(t, c.query("ssh-ed25519", key.PublicKey()), "ssh-ed25519", key.PublicKey())
	}
	wantDisconnect(t, c.query("ssh-ed25519", key.PublicKey()), wire.DisconnectNoMoreAuthMethodsAvailable)
	if r := wantResult(t, ch); !errors.Is(r.err, ErrTooManyRequests) {
		t.Fatalf("Run error %v", r.err)
	}
}

// wantDisconnect checks an SSH_MSG_DISCONNECT with reason.
func wantDisconnect(t *testing.T, p []byte, reason uint32) {
	t.Helper()
	wantMsg(t, p, wire.MsgDisconnect, "disconnect")
	if got := wire.NewReader(p[1:]).Uint32("reason"); got != reason {
		t.Fatalf("disconnect reason %d, want %d", got, reason)
	}
}

func TestBannerBeforeFirstAnswer(t *testing.T) {
	w := newWorld(t)
	w.cfg.Banner = "authorized use only\r\n"
	c, _ := startRun(t, w.cfg)
	c.startService()
	c.write(c.header("none"))
	p, err := c.pc.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	wantMsg(t, p, wire.MsgUserAuthBanner, "banner")
	r := wire.NewReader(p[1:])
	if text, lang := r.String("text"), r.String("lang"); r.Done() != nil || text != w.cfg.Banner || lang != "" {
		t.Fatalf("banner %q %q", text, lang)
	}
	wantFailure(t, c.read(), "publickey")
	wantFailure(t, c.none(), "publickey")
	if len(c.banners) != 0 {
		t.Fatalf("banner sent again: %q", c.banners)
	}
}

func TestRootPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy   RootLogin
		command  bool
		password bool
		want     bool
	}{
		{"", false, false, true},
		{"", false, true, false},
		{RootProhibitPassword, false, true, false},
		{RootNo, false, false, false},
		{RootForcedCommandsOnly, false, false, false},
		{RootForcedCommandsOnly, true, false, true},
		{RootForcedCommandsOnly, true, true, false},
		{RootYes, false, true, true},
	} {
		name := string(tc.policy) + map[bool]string{true: "/password", false: "/key"}[tc.password]
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			key := newEd25519(t)
			opts := ""
			if tc.command {
				opts = `command="/bin/backup"`
			}
			w.authorize(authLine(opts, key.PublicKey()))
			w.ownBy(0) // root's files: StrictModes wants them root's
			w.cfg.PermitRootLogin = tc.policy
			w.cfg.PasswordAuthentication = true
			w.cfg.PasswordCallback = func(u, p string) (bool, error) { return p == "secret", nil }
			c, ch := startRun(t, w.cfg)
			c.user = "root"
			c.startService()
			var p []byte
			if tc.password {
				p = c.password("secret")
			} else {
				p = c.signed("ssh-ed25519", key)
			}
			if tc.want {
				wantSuccess(t, p, ch)
			} else {
				wantFailure(t, p, "publickey,password")
			}
		})
	}
}

func TestPassword(t *testing.T) {
	w := newWorld(t)
	var gotUser string
	w.cfg.PasswordCallback = func(u, p string) (bool, error) {
		gotUser = u
		if p == "boom" {
			return true, errors.New("backend down")
		}
		return p == "hunter2", nil
	}
	c, _ := startRun(t, w.cfg) // disabled: the callback is not asked
	c.startService()
	wantFailure(t, c.password("hunter2"), "publickey")
	if gotUser != "" {
		t.Fatal("callback called with password authentication off")
	}

	w.cfg.PasswordAuthentication = true
	c, ch := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.password("xyzzy-not-it"), "publickey,password")
	wantFailure(t, c.password("boom"), "publickey,password")
	change := wire.AppendBool(c.header("password"), true)
	change = wire.AppendString(wire.AppendString(change, "hunter2"), "new")
	c.write(change)
	wantFailure(t, c.read(), "publickey,password")
	perms := wantSuccess(t, c.password("hunter2"), ch)
	if perms.User != "alice" || perms.Method != "password" || gotUser != "alice" {
		t.Fatalf("permissions %+v, callback user %q", perms, gotUser)
	}
	if w.logged("hunter2") || w.logged("xyzzy") {
		t.Fatalf("password in log:\n%s", w.logs)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []*Config{
		{AuthenticationMethods: [][]string{{"publickey", "hostbased"}}},
		{AuthenticationMethods: [][]string{{"password:pam"}}},
		{AuthenticationMethods: [][]string{{}}},
		{MaxAuthTries: -1},
		{PermitRootLogin: "maybe"},
		{AuthorizedKeysFiles: []string{"%x/keys"}},
		{AuthorizedPrincipalsFile: "/etc/p/%"},
		{PublicKeyAlgorithms: []string{"ssh-dss"}},
		{CASignatureAlgorithms: []string{"ssh-ed25519-cert-v01@openssh.com"}},
	}
	for _, cfg := range bad {
		var ce *ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) {
			t.Errorf("%+v: Validate %v", cfg, err)
		}
		server, _ := memPipe(nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := Run(ctx, server, cfg, nil)
		cancel()
		if !errors.As(err, &ce) {
			t.Errorf("%+v: Run %v", cfg, err)
		}
	}
	if err := (&Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
}

func TestProtocolErrors(t *testing.T) {
	type step func(c *testClient)
	req := func(user, service, method string) []byte {
		b := wire.AppendString([]byte{wire.MsgUserAuthRequest}, user)
		return wire.AppendString(wire.AppendString(b, service), method)
	}
	for _, tc := range []struct {
		name   string
		steps  step
		reason uint32
		is     error
	}{
		{"first message not service request", func(c *testClient) { c.write(req("alice", "ssh-connection", "none")) },
			wire.DisconnectProtocolError, ErrUnexpectedMessage},
		{"empty message", func(c *testClient) { c.write([]byte{}) }, wire.DisconnectProtocolError, ErrUnexpectedMessage},
		{"other service", func(c *testClient) { c.write(wire.AppendString([]byte{wire.MsgServiceRequest}, "ssh-connection")) },
			wire.DisconnectServiceNotAvailable, ErrBadService},
		{"truncated service request", func(c *testClient) { c.write([]byte{wire.MsgServiceRequest, 0, 0, 1}) },
			wire.DisconnectProtocolError, wire.ErrShort},
		{"channel open before auth", func(c *testClient) { c.startService(); c.write([]byte{wire.MsgChannelOpen}) },
			wire.DisconnectProtocolError, ErrUnexpectedMessage},
		{"truncated request", func(c *testClient) { c.startService(); c.write(req("alice", "ssh-connection", "publickey")) },
			wire.DisconnectProtocolError, wire.ErrShort},
		{"trailing bytes", func(c *testClient) { c.startService(); c.write(append(req("alice", "ssh-connection", "none"), 0)) },
			wire.DisconnectProtocolError, nil},
		{"service in request", func(c *testClient) { c.startService(); c.write(req("alice", "ssh-foo", "none")) },
			wire.DisconnectServiceNotAvailable, ErrBadService},
		{"illegal user", func(c *testClient) { c.startService(); c.write(req("al\x00ice", "ssh-connection", "none")) },
			wire.DisconnectIllegalUserName, ErrIllegalUser},
		{"overlong user", func(c *testClient) {
			c.startService()
			c.write(req(strings.Repeat("a", 300), "ssh-connection", "none"))
		},
			wire.DisconnectProtocolError, errTooLong},
		{"user change", func(c *testClient) {
			c.startService()
			wantFailure(c.t, c.none(), "publickey")
			c.write(req("bob", "ssh-connection", "none"))
		}, wire.DisconnectProtocolError, ErrUserChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			c, ch := startRun(t, w.cfg)
			tc.steps(c)
			wantDisconnect(t, c.read(), tc.reason)
			r := wantResult(t, ch)
			var de *DisconnectError
			if !errors.As(r.err, &de) || de.Reason != tc.reason || !de.Sent || (tc.is != nil && !errors.Is(r.err, tc.is)) {
				t.Fatalf("Run error %v, want reason %d and %v", r.err, tc.reason, tc.is)
			}
			if !w.logged("remote=192.0.2.10:2222") || !w.logged("disconnecting") {
				t.Fatalf("log does not name the peer and cause:\n%s", w.logs)
			}
		})
	}
}

// A message number no specification defines gets SSH_MSG_UNIMPLEMENTED
// with its sequence number, and authentication goes on.
func TestUnknownMessageUnimplemented(t *testing.T) {
	w := newWorld(t)
	c, _ := startRun(t, w.cfg)
	c.write([]byte{200, 1, 2, 3})
	if got, want := c.read(), []byte{wire.MsgUnimplemented, 0, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Fatalf("answer to message 200 = %x, want %x", got, want)
	}
	c.startService()
	c.write([]byte{wire.MsgChannelFailure + 1})
	if got, want := c.read(), []byte{wire.MsgUnimplemented, 0, 0, 0, 2}; !bytes.Equal(got, want) {
		t.Fatalf("answer to message 101 = %x, want %x", got, want)
	}
	wantFailure(t, c.none(), "publickey")
}

// A flood of unknown messages ends like a flood of requests.
func TestUnknownMessageFlood(t *testing.T) {
	w := newWorld(t)
	c, ch := startRun(t, w.cfg)
	for i := 0; ; i++ {
		c.write([]byte{250})
		p := c.read()
		if p[0] == wire.MsgDisconnect {
			if i < 10 {
				t.Fatalf("disconnected after %d unknown messages", i)
			}
			break
		}
		if p[0] != wire.MsgUnimplemented || i > 1000 {
			t.Fatalf("answer %d to an unknown message: %x", i, p)
		}
	}
	if r := wantResult(t, ch); !errors.Is(r.err, ErrTooManyRequests) {
		t.Fatalf("Run error %v, want ErrTooManyRequests", r.err)
	}
}

func TestWithoutDisconnector(t *testing.T) {
	w := newWorld(t)
	server, client := memPipe(testSessionID)
	ch := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), plainConn{server}, w.cfg, nil)
		ch <- err
	}()
	defer client.Close()
	if err := client.WritePacket([]byte{wire.MsgIgnore}); err != nil {
		t.Fatal(err)
	}
	var de *DisconnectError
	if err := <-ch; !errors.As(err, &de) || de.Sent || de.Reason != wire.DisconnectProtocolError {
		t.Fatalf("Run error %v", err)
	}
	if _, ok := server.disconnectReason(); ok {
		t.Fatal("Disconnect called through plainConn")
	}
}

func TestContextCancelInterruptsRead(t *testing.T) {
	w := newWorld(t)
	server, client := memPipe(testSessionID)
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() {
		_, err := Run(ctx, server, w.cfg, &net.TCPAddr{IP: net.IPv6loopback, Port: 1})
		ch <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	select {
	case err := <-ch:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run error %v", err)
		}
	case <-testenv.Timeout(t):
		t.Fatal("Run ignored the cancelled context")
	}
}

func TestPeerGoneIsNotADisconnect(t *testing.T) {
	w := newWorld(t)
	c, ch := startRun(t, w.cfg)
	c.startService()
	c.pc.Close()
	r := wantResult(t, ch)
	var de *DisconnectError
	if r.err == nil || errors.As(r.err, &de) {
		t.Fatalf("Run error %v", r.err)
	}
}

func TestVerifyRequiredNeedsUserVerification(t *testing.T) {
	// An Ed25519 signature carries no FIDO flags, so verify-required
	// can never be met by it; the query still gets PK_OK, as in OpenSSH.
	w := newWorld(t)
	key := newEd25519(t)
	w.authorize(authLine("verify-required", key.PublicKey()))
	c, _ := startRun(t, w.cfg)
	c.startService()
	wantPKOK(t, c.query("ssh-ed25519", key.PublicKey()), "ssh-ed25519", key.PublicKey())
	wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
}

func TestReadBounded(t *testing.T) {
	if _, err := readBounded("big", strings.NewReader(strings.Repeat("x", MaxFileSize+1))); !errors.Is(err, errTooLarge) {
		t.Fatalf("readBounded: %v", err)
	}
	if b, err := readBounded("ok", strings.NewReader(strings.Repeat("x", MaxFileSize))); err != nil || len(b) != MaxFileSize {
		t.Fatalf("readBounded at the limit: %d %v", len(b), err)
	}
}

// A failed publickey is logged at INFO (else VERBOSE, Debug here) once
// the failures before it reach half of MaxAuthTries, as OpenSSH counts
// them: with MaxAuthTries 4, the third failure is the first at INFO.
func TestFailedPublickeyLevel(t *testing.T) {
	w := newWorld(t)
	w.cfg.MaxAuthTries = 4
	c, _ := startRun(t, w.cfg)
	c.startService()
	var levels []string
	for i := 0; i < 3; i++ {
		before := w.logs.Len()
		wantFailure(t, c.signed("ssh-ed25519", newEd25519(t)), "publickey")
		for _, l := range strings.Split(w.logs.String()[before:], "\n") {
			if strings.Contains(l, "Failed publickey for alice") {
				_, rest, _ := strings.Cut(l, "level=")
				lvl, _, _ := strings.Cut(rest, " ")
				levels = append(levels, lvl)
			}
		}
	}
	if got := strings.Join(levels, " "); got != "DEBUG DEBUG INFO" {
		t.Fatalf("levels of the three failures: %s, want DEBUG DEBUG INFO\n%s", got, w.logs)
	}
}
