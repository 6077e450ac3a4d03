package auth

import (
	"errors"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/sshd/perm"
)

func TestParseOptionsPermissions(t *testing.T) {
	for _, tc := range []struct {
		opts string
		want perm.Permissions
	}{
		{"", perm.Permissions{}},
		{"no-pty", perm.Permissions{NoPTY: true}},
		{"NO-PTY", perm.Permissions{NoPTY: true}},
		{"no-port-forwarding", perm.Permissions{NoPortForwarding: true}},
		{"no-agent-forwarding", perm.Permissions{NoAgentForwarding: true}},
		{"no-X11-forwarding", perm.Permissions{NoX11Forwarding: true}},
		{"no-user-rc", perm.Permissions{NoUserRC: true}},
		{"restrict", perm.Permissions{NoPTY: true, NoPortForwarding: true, NoAgentForwarding: true, NoX11Forwarding: true, NoUserRC: true}},
		{"restrict,pty,port-forwarding", perm.Permissions{NoAgentForwarding: true, NoX11Forwarding: true, NoUserRC: true}},
		{"restrict,agent-forwarding,x11-forwarding,user-rc", perm.Permissions{NoPTY: true, NoPortForwarding: true}},
		{"pty,restrict", perm.Permissions{NoPTY: true, NoPortForwarding: true, NoAgentForwarding: true, NoX11Forwarding: true, NoUserRC: true}},
		{`command="echo \"hi, there\" \\n"`, perm.Permissions{ForceCommand: `echo "hi, there" \\n`}},
		{`permitopen="db:5432",permitopen="[::1]:*"`, perm.Permissions{PermitOpen: []string{"db:5432", "[::1]:*"}}},
		{`permitlisten="8080",permitlisten="localhost:*",permitlisten="[::1]:22"`,
			perm.Permissions{PermitListen: []string{"*:8080", "localhost:*", "[::1]:22"}}},
		{`restrict,permitlisten="*"`, perm.Permissions{PermitListen: []string{"*:*"}, NoPTY: true, NoPortForwarding: true,
			NoAgentForwarding: true, NoX11Forwarding: true, NoUserRC: true}},
		{`environment="A=1",environment="B_2=x=y"`, perm.Permissions{Environment: []string{"A=1", "B_2=x=y"}}},
	} {
		o, err := parseOptions(splitOptionList(tc.opts))
		if tc.opts == "" {
			o, err = parseOptions(nil)
		}
		if err != nil {
			t.Errorf("%s: %v", tc.opts, err)
			continue
		}
		got := o.permissions("", true)
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.opts, *got, tc.want)
		}
	}
}

func TestParseOptionsRejects(t *testing.T) {
	for _, opts := range []string{
		"no-pty=\"1\"", "restrict=\"x\"", "cert-authority=\"x\"",
		"command", `command=unquoted`, `command=""`, `command="a"b"`, `command="open`,
		`environment="=x"`, `environment="1A=x"`, `environment="noequals"`,
		`from=""`, `permitopen="host"`, `permitopen="host:0"`, `permitopen="host:99999"`, `permitopen=":80"`, `permitopen="[::1:80"`,
		`expiry-time="2025"`, `expiry-time="2025013"`, `expiry-time="20251340"`, `expiry-time="2025-01-01"`,
		`principals="a,,b"`,
		`permitlisten="0"`, `permitlisten="host:0"`, `permitlisten="70000"`, `permitlisten=":80"`, `permitlisten="[::1:80"`,
		`permitlisten="host:"`, `permitlisten=""`, `permitlisten="x"`,
		"tunnel=\"1\"", "no-such-option", "=x", "",
	} {
		_, err := parseOptions([]string{opts})
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%q accepted (%v)", opts, err)
		}
	}
}

func TestExpiryTime(t *testing.T) {
	utc, err := parseExpiry("20250102030405Z")
	if err != nil || !utc.Equal(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("UTC expiry %v %v", utc, err)
	}
	local, err := parseExpiry("202501020304")
	if err != nil || !local.Equal(time.Date(2025, 1, 2, 3, 4, 0, 0, time.Local)) {
		t.Fatalf("local expiry %v %v", local, err)
	}
	o, _ := parseOptions([]string{`expiry-time="20250101Z"`, `expiry-time="20300101Z"`})
	addr := netip.MustParseAddr("192.0.2.1")
	if err := o.allows(addr, time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	if err := o.allows(addr, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("at expiry: %v", err)
	}
	if err := o.allows(addr, time.Date(2025, 1, 1, 0, 0, 1, 0, time.UTC)); err == nil {
		t.Fatal("after the earlier of two expiry-times: allowed")
	}
}

func TestFromOption(t *testing.T) {
	o, err := parseOptions([]string{`from="192.0.2.0/24,!192.0.2.66,10.*"`})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"192.0.2.10": true, "192.0.2.66": false, "10.1.2.3": true, "198.51.100.1": false, "::1": false,
	} {
		if err := o.allows(netip.MustParseAddr(addr), time.Now()); (err == nil) != want {
			t.Errorf("from= %s: %v, want allowed=%v", addr, err, want)
		}
	}
	if err := o.allows(netip.Addr{}, time.Now()); err == nil {
		t.Error("from= allowed a client without an IP address")
	}
}

// loginWith authorizes key with opts and logs in from remote.
func loginWith(t *testing.T, w *world, opts string, remote net.Addr) (*perm.Permissions, error) {
	t.Helper()
	key := newEd25519(t)
	w.authorize(authLine(opts, key.PublicKey()))
	c, ch := startRunFrom(t, w.cfg, remote)
	c.startService()
	p := c.signed("ssh-ed25519", key)
	if p[0] == 52 {
		return wantSuccess(t, p, ch), nil
	}
	wantFailure(t, p, "publickey")
	return nil, errors.New("refused")
}

func TestAuthorizedKeysOptionsInConversation(t *testing.T) {
	from := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 40000}
	other := &net.TCPAddr{IP: net.ParseIP("::ffff:198.51.100.7"), Port: 40000}
	for _, tc := range []struct {
		opts   string
		remote net.Addr
		ok     bool
		check  func(*perm.Permissions) bool
	}{
		{`from="192.0.2.*"`, from, true, nil},
		{`from="192.0.2.*"`, other, false, nil},
		{`from="!198.51.100.7,*"`, other, false, nil},
		{`from="192.0.2.10"`, pipeAddr{}, false, nil},
		{`expiry-time="20000101"`, from, false, nil},
		{`expiry-time="29991231235959Z"`, from, true, nil},
		{`restrict,pty,command="uptime"`, from, true, func(p *perm.Permissions) bool {
			return !p.NoPTY && p.NoPortForwarding && p.NoUserRC && p.ForceCommand == "uptime"
		}},
		{`environment="LANG=C"`, from, true, func(p *perm.Permissions) bool { return p.Environment == nil }},
		{`tunnel="0"`, from, false, nil},
		{`cert-authority`, from, false, nil},
	} {
		w := newWorld(t)
		p, err := loginWith(t, w, tc.opts, tc.remote)
		if (err == nil) != tc.ok {
			t.Errorf("%s from %v: login %v, want %v\n%s", tc.opts, tc.remote, err, tc.ok, w.logs)
			continue
		}
		if tc.check != nil && !tc.check(p) {
			t.Errorf("%s: permissions %+v", tc.opts, p)
		}
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "stdin" }

func TestPermitUserEnvironment(t *testing.T) {
	w := newWorld(t)
	w.cfg.PermitUserEnvironment = true
	p, err := loginWith(t, w, `environment="LANG=C",environment="TZ=UTC"`, nil)
	if err != nil || !reflect.DeepEqual(p.Environment, []string{"LANG=C", "TZ=UTC"}) {
		t.Fatalf("permissions %+v, %v", p, err)
	}
}

func TestBadLineDoesNotHideLaterLines(t *testing.T) {
	w := newWorld(t)
	key := newEd25519(t)
	line := authLine("", key.PublicKey())
	w.authorize(
		authLine("frobnicate", key.PublicKey()),
		"ssh-ed25519 not-base64",
		authLine(`from="203.0.113.1"`, key.PublicKey()),
		"x"+strings.Repeat("y", MaxLineLength),
		authLine(`no-pty`, key.PublicKey()),
		line)
	c, ch := startRun(t, w.cfg)
	c.startService()
	p := wantSuccess(t, c.signed("ssh-ed25519", key), ch)
	if !p.NoPTY {
		t.Fatalf("first usable line not used: %+v", p)
	}
	for _, s := range []string{"line=1", "unknown or unsupported option", "line=2", "line=3", "not in from=", "line=4", "line too long"} {
		if !w.logged(s) {
			t.Errorf("log lacks %q:\n%s", s, w.logs)
		}
	}
}

func TestKeyTypeSpoofInAuthorizedKeys(t *testing.T) {
	// "restrict" in the key type position must not be dropped silently.
	key := newEd25519(t)
	b64 := strings.Fields(authLine("", key.PublicKey()))[1]
	l, err := parseAuthorizedKeysLine([]byte("restrict " + b64))
	if err == nil && !l.opts.noPTY {
		t.Fatal("option in the key type position dropped")
	}
	if _, err := parseAuthorizedKeysLine([]byte("ssh-rsa " + b64)); err == nil {
		t.Fatal("key type mismatch accepted")
	}
}
