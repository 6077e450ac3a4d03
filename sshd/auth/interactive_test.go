package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/sshd/account"
	"github.com/offload/offload/sshd/wire"
)

func (c *testClient) kbdInt() []byte {
	b := wire.AppendString(c.header("keyboard-interactive"), "")
	c.write(wire.AppendString(b, ""))
	return c.read()
}

func (c *testClient) infoResponse(resp ...string) []byte {
	b := wire.AppendUint32([]byte{msgInfoResponse}, uint32(len(resp)))
	for _, r := range resp {
		b = wire.AppendString(b, r)
	}
	c.write(b)
	return c.read()
}

func (c *testClient) passwordChange(old, new string) []byte {
	b := wire.AppendBool(c.header("password"), true)
	b = wire.AppendString(b, old)
	c.write(wire.AppendString(b, new))
	return c.read()
}

// wantInfoRequest expects an INFO_REQUEST and returns its prompts.
func wantInfoRequest(t testing.TB, p []byte) []Prompt {
	t.Helper()
	wantMsg(t, p, msgInfoRequest, "info request")
	r := wire.NewReader(p[1:])
	r.String("name")
	r.String("instruction")
	r.String("language")
	n := r.Uint32("prompts")
	var ps []Prompt
	for i := uint32(0); i < n && r.Err() == nil; i++ {
		ps = append(ps, Prompt{Text: r.String("prompt"), Echo: r.Bool("echo")})
	}
	if err := r.Done(); err != nil {
		t.Fatalf("info request: %v", err)
	}
	return ps
}

func wantPartial(t testing.TB, p []byte, methods string) {
	t.Helper()
	wantMsg(t, p, wire.MsgUserAuthFailure, "failure")
	r := wire.NewReader(p[1:])
	got := r.String("methods")
	if partial := r.Bool("partial"); !partial || got != methods {
		t.Fatalf("failure: methods %q partial %v, want %q with partial success", got, partial, methods)
	}
}

const alicePassword = "tr0ub4dor&3"

// shadowWorld gives alice a SHA-512 password in a shadow entry the
// account policy reads through LookupAccount.
func shadowWorld(t *testing.T, edit func(*account.Account)) *world {
	t.Helper()
	h, err := account.HashPassword(alicePassword, "$6$0123456789abcdef$")
	if err != nil {
		t.Skipf("no libcrypt in this build: %v", err)
	}
	w := newWorld(t)
	w.cfg.LookupAccount = func(name string) (*account.Account, error) {
		a := &account.Account{Name: name, Passwd: "x", UID: 1000, Home: w.home, Shell: "/bin/sh",
			Shadow: &account.Shadow{Name: name, Hash: h, LastChange: time.Now().Unix() / 86400, Max: -1, Warn: 7, Inactive: -1, Expire: -1}}
		if edit != nil {
			edit(a)
		}
		return a, nil
	}
	w.cfg.TimingSecret = []byte("test")
	return w
}

func TestPasswordShadow(t *testing.T) {
	w := shadowWorld(t, nil)
	w.cfg.PasswordAuthentication = true
	c, ch := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.password("wrong"), "publickey,password")
	wantFailure(t, c.password("\xff\xfe not utf-8"), "publickey,password")
	wantFailure(t, c.passwordChange(alicePassword, "new"), "publickey,password")
	p := wantSuccess(t, c.password(alicePassword), ch)
	if p.Method != "password" || p.User != "alice" || p.ForceCommand != "" {
		t.Fatalf("permissions %+v", p)
	}
	for _, want := range []string{
		"Failed password for alice from 192.0.2.10 port 2222 ssh2",
		"password change not supported",
		"Accepted password for alice from 192.0.2.10 port 2222 ssh2",
	} {
		if !w.logged(want) {
			t.Errorf("log lacks %q:\n%s", want, w.logs)
		}
	}
	if w.logged(alicePassword) {
		t.Fatal("password in the log")
	}
}

func TestPasswordAccountPolicy(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(*account.Account)
		log  string
	}{
		"locked":  {func(a *account.Account) { a.Shadow.Hash = "!" + a.Shadow.Hash }, "User alice not allowed because account is locked"},
		"expired": {func(a *account.Account) { a.Shadow.Expire = 0 }, "Account alice has expired"},
		"shell":   {func(a *account.Account) { a.Shell = "/nonexistent" }, "User alice not allowed because shell /nonexistent does not exist"},
	} {
		w := shadowWorld(t, c.edit)
		w.cfg.PasswordAuthentication = true
		cl, _ := startRun(t, w.cfg)
		cl.startService()
		wantFailure(t, cl.password(alicePassword), "publickey,password")
		if !w.logged(c.log) || !w.logged("Failed password for invalid user alice") {
			t.Errorf("%s: log lacks %q or the invalid-user failure:\n%s", name, c.log, w.logs)
		}
	}
}

// An expired password (chage -d 0) logs in restricted to changing it, as
// OpenSSH without PAM does.
func TestPasswordExpiredForcesChange(t *testing.T) {
	w := shadowWorld(t, func(a *account.Account) { a.Shadow.LastChange = 0 })
	w.cfg.PasswordAuthentication = true
	c, ch := startRun(t, w.cfg)
	c.startService()
	p := wantSuccess(t, c.password(alicePassword), ch)
	if !strings.Contains(p.ForceCommand, "passwd") || !p.NoPortForwarding || !p.NoAgentForwarding || p.NoPTY {
		t.Fatalf("permissions %+v, want a forced passwd with a pty and nothing else", p)
	}
	if !w.logged("User alice password has expired (root forced)") {
		t.Errorf("log:\n%s", w.logs)
	}
}

func TestKbdIntPassword(t *testing.T) {
	w := shadowWorld(t, nil)
	w.cfg.KbdInteractiveAuthentication = true
	c, ch := startRun(t, w.cfg)
	c.startService()
	ps := wantInfoRequest(t, c.kbdInt())
	if len(ps) != 1 || ps[0].Echo || ps[0].Text != "Password: " {
		t.Fatalf("prompts %+v", ps)
	}
	wantFailure(t, c.infoResponse("wrong"), "publickey,keyboard-interactive")
	// a response that is not UTF-8 (RFC 4256 section 3.4), or holds a
	// NUL, is a failure, never the password's prefix
	wantInfoRequest(t, c.kbdInt())
	wantFailure(t, c.infoResponse(alicePassword+"\xff\xfe"), "publickey,keyboard-interactive")
	wantInfoRequest(t, c.kbdInt())
	wantFailure(t, c.infoResponse(alicePassword+"\x00more"), "publickey,keyboard-interactive")
	wantInfoRequest(t, c.kbdInt())
	p := wantSuccess(t, c.infoResponse(alicePassword), ch)
	if p.Method != "keyboard-interactive" {
		t.Fatalf("permissions %+v", p)
	}
}

// Bad keyboard-interactive input: a clear disconnect, never a hang.
func TestKbdIntBadInput(t *testing.T) {
	cases := map[string]func(c *testClient) []byte{
		"response to no prompt": func(c *testClient) []byte { return c.infoResponse("x") },
		"too many responses": func(c *testClient) []byte {
			wantInfoRequest(t, c.kbdInt())
			return c.infoResponse("a", "b")
		},
		"no responses": func(c *testClient) []byte {
			wantInfoRequest(t, c.kbdInt())
			return c.infoResponse()
		},
		"huge response": func(c *testClient) []byte {
			wantInfoRequest(t, c.kbdInt())
			return c.infoResponse(strings.Repeat("x", MaxResponseLen+1))
		},
		"a thousand responses": func(c *testClient) []byte {
			wantInfoRequest(t, c.kbdInt())
			return c.infoResponse(make([]string, 1000)...)
		},
	}
	for name, f := range cases {
		w := shadowWorld(t, nil)
		w.cfg.KbdInteractiveAuthentication = true
		c, ch := startRun(t, w.cfg)
		c.startService()
		wantDisconnect(t, f(c), wire.DisconnectProtocolError)
		if r := wantResult(t, ch); r.err == nil {
			t.Errorf("%s: Run succeeded", name)
		}
	}
	// a new request abandons a round
	w := shadowWorld(t, nil)
	w.cfg.KbdInteractiveAuthentication = true
	w.cfg.PasswordAuthentication = true
	c, ch := startRun(t, w.cfg)
	c.startService()
	wantInfoRequest(t, c.kbdInt())
	wantFailure(t, c.password("wrong"), "publickey,password,keyboard-interactive")
	wantDisconnect(t, c.infoResponse(alicePassword), wire.DisconnectProtocolError)
	wantResult(t, ch)
}

func TestAuthenticationMethods(t *testing.T) {
	w := shadowWorld(t, nil)
	key, other := newEd25519(t), newEd25519(t)
	w.authorize(authLine("", key.PublicKey()), authLine("no-pty", other.PublicKey()))
	w.cfg.PasswordAuthentication = true
	w.cfg.KbdInteractiveAuthentication = true
	w.cfg.AuthenticationMethods = [][]string{{"publickey", "password"}, {"publickey", "publickey"}}
	c, ch := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.none(), "publickey")
	wantFailure(t, c.password(alicePassword), "publickey") // not first in any list
	wantPartial(t, c.signed("ssh-ed25519", key), "publickey,password")
	wantPartial(t, c.signed("ssh-ed25519", key), "publickey,password") // the same key again
	p := wantSuccess(t, c.password(alicePassword), ch)
	if p.Method != "publickey,password" || p.KeyFingerprint == "" {
		t.Fatalf("permissions %+v", p)
	}
	if !w.logged("Partial publickey for alice") {
		t.Errorf("log:\n%s", w.logs)
	}

	// publickey,publickey needs two different keys; the restrictions of both apply
	c, ch = startRun(t, w.cfg)
	c.startService()
	wantPartial(t, c.signed("ssh-ed25519", key), "publickey,password")
	p = wantSuccess(t, c.signed("ssh-ed25519", other), ch)
	if p.Method != "publickey,publickey" || !p.NoPTY {
		t.Fatalf("permissions %+v", p)
	}
}

// TestAuthenticationMethodsNone: "none" is a method OpenSSH's
// AuthenticationMethods accepts; a list of it alone lets no key in (only
// an empty password, TestEmptyPasswordByNone), and offers no method.
func TestAuthenticationMethodsNone(t *testing.T) {
	w := shadowWorld(t, nil)
	w.cfg.AuthenticationMethods = [][]string{{"none"}}
	key := newEd25519(t)
	w.authorize(authLine("", key.PublicKey()))
	c, _ := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.none(), "")
	wantFailure(t, c.signed("ssh-ed25519", key), "")
	if w.logged("no AuthenticationMethods left") {
		t.Errorf("the none list was dropped as disabled:\n%s", w.logs)
	}
}

func TestAuthenticationMethodsDisabledList(t *testing.T) {
	w := shadowWorld(t, nil)
	w.cfg.AuthenticationMethods = [][]string{{"publickey", "password"}} // password is off
	key := newEd25519(t)
	w.authorize(authLine("", key.PublicKey()))
	c, _ := startRun(t, w.cfg)
	c.startService()
	wantFailure(t, c.signed("ssh-ed25519", key), "")
	if !w.logged("no AuthenticationMethods left") {
		t.Errorf("log:\n%s", w.logs)
	}
}

func TestDenyUsersAndGroups(t *testing.T) {
	key := newEd25519(t)
	for _, edit := range []func(*Config){
		func(c *Config) { c.DenyUsers = []string{"al*"} },
		func(c *Config) { c.AllowUsers = []string{"bob"} },
		func(c *Config) { c.DenyUsers = []string{"*@192.0.2.0/24"} },
	} {
		w := newWorld(t)
		w.authorize(authLine("", key.PublicKey()))
		edit(w.cfg)
		c, _ := startRun(t, w.cfg)
		c.startService()
		wantFailure(t, c.signed("ssh-ed25519", key), "publickey")
		if !w.logged("User alice from 192.0.2.10 not allowed because") {
			t.Errorf("log:\n%s", w.logs)
		}
	}
}

func TestSummary(t *testing.T) {
	w := shadowWorld(t, nil)
	w.cfg.PasswordAuthentication = true
	a, err := NewAuthority(w.cfg, testSessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a.Begin(ctx, "alice", "ssh-connection")
	a.Decide(ctx, &Request{User: "alice", Service: "ssh-connection", Method: "none"})
	if s := a.(Summarizer).Summary(); s != (Summary{}) {
		t.Fatalf("after none: %+v", s)
	}
	a.Decide(ctx, &Request{User: "alice", Service: "ssh-connection", Method: "password", Password: "wrong"})
	if s := a.(Summarizer).Summary(); !s.Attempted || s.Authenticated || s.InvalidUser {
		t.Fatalf("after a wrong password: %+v", s)
	}
	a.Decide(ctx, &Request{User: "alice", Service: "ssh-connection", Method: "password", Password: alicePassword})
	if s := a.(Summarizer).Summary(); !s.Authenticated {
		t.Fatalf("after the right password: %+v", s)
	}
	b, _ := NewAuthority(w.cfg, testSessionID, nil)
	b.Begin(ctx, "mallory", "ssh-connection")
	b.Decide(ctx, &Request{User: "mallory", Service: "ssh-connection", Method: "none"})
	b.Decide(ctx, &Request{User: "mallory", Service: "ssh-connection", Method: "password", Password: "x"})
	if s := b.(Summarizer).Summary(); !s.InvalidUser || !s.Attempted {
		t.Fatalf("invalid user: %+v", s)
	}
}

// PermitEmptyPasswords: OpenSSH's clients send "none" first, and an
// account whose password is empty logs in by it when PermitEmptyPasswords
// and PasswordAuthentication are on and AuthenticationMethods names no
// lists.
func TestEmptyPasswordByNone(t *testing.T) {
	empty := func(a *account.Account) { a.Shadow.Hash = "" }
	for _, tc := range []struct {
		name       string
		edit       func(*account.Account)
		permit, pw bool
		lists      [][]string
		want       bool
	}{
		{"empty, permitted", empty, true, true, nil, true},
		{"empty, PermitEmptyPasswords no", empty, false, true, nil, false},
		{"empty, PasswordAuthentication no", empty, true, false, nil, false},
		{"empty, AuthenticationMethods lists", empty, true, true, [][]string{{"password"}}, false},
		{"empty, AuthenticationMethods none", empty, true, true, [][]string{{"none"}}, true},
		{"a password, AuthenticationMethods none", nil, true, true, [][]string{{"none"}}, false},
		{"a password", nil, true, true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := shadowWorld(t, tc.edit)
			w.cfg.PermitEmptyPasswords, w.cfg.PasswordAuthentication, w.cfg.AuthenticationMethods = tc.permit, tc.pw, tc.lists
			c, ch := startRun(t, w.cfg)
			c.startService()
			p := c.none()
			if !tc.want {
				if len(p) == 0 || p[0] != wire.MsgUserAuthFailure {
					t.Fatalf("none: message %v, want a failure", p)
				}
				return
			}
			if perms := wantSuccess(t, p, ch); perms.Method != "none" {
				t.Fatalf("permissions %+v", perms)
			}
			if !w.logged("Accepted none for alice from 192.0.2.10 port 2222 ssh2") {
				t.Errorf("log:\n%s", w.logs)
			}
		})
	}
}

// TestUserStyle: "alice:style" (OpenSSH's BSD-auth style after the
// name) logs in as alice, the signature covering the name as sent; the
// style is ignored as OpenSSH's sshd ignores it without BSD auth.
func TestUserStyle(t *testing.T) {
	for _, name := range []string{"alice:style", "alice:"} {
		w := newWorld(t)
		key := newEd25519(t)
		w.authorize(authLine("", key.PublicKey()))
		c, ch := startRun(t, w.cfg)
		c.user = name
		c.startService()
		if p := wantSuccess(t, c.signed("ssh-ed25519", key), ch); p.User != "alice" {
			t.Fatalf("%s: logged in as %q", name, p.User)
		}
	}
}
