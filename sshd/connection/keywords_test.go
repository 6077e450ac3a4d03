package connection

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// fakeHome gives the test user a temporary home directory.
func fakeHome(t *testing.T, p *perm.Permissions) string {
	t.Helper()
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	homeOverride.Store(p.User, home)
	t.Cleanup(func() { homeOverride.Delete(p.User) })
	return home
}

func TestEnvironmentOrder(t *testing.T) {
	p := self(t)
	p.Environment = []string{"FROM_KEY=key", "OVER=key", "NOTALLOWED=key"}
	home := fakeHome(t, p)
	os.WriteFile(filepath.Join(home, ".ssh", "environment"),
		[]byte("# comment\n  USERENV=file\nOVER=file\nNOTALLOWED=x\nbad line\n"), 0o600)
	cfg := &Config{AcceptEnv: []string{"*"}, SetEnv: []string{"SETENV=admin", "OVER=admin"},
		PermitUserEnvironment: []string{"USERENV", "OVER", "FROM_*", "!NOTALLOWED"}}
	c := startClient(t, cfg, p)
	ch := c.session(t)
	for _, kv := range [][2]string{{"PATH", "/evil"}, {"HOME", "/evil"}, {"CLIENT", "yes"}, {"OVER", "client"}} {
		ch.req("env", true, wire.AppendString(wire.AppendString(nil, kv[0]), kv[1]))
	}
	ch.exec(`echo "$PATH|$HOME|$CLIENT|$FROM_KEY|$USERENV|$SETENV|$OVER|${NOTALLOWED-unset}"`)
	ch.sendEOF()
	ch.waitClosed(t)
	want := hostEnvPath(uidOf(t)) + "|" + home + "|yes|key|file|admin|admin|unset\n"
	if got := ch.stdout.String(); got != want {
		t.Errorf("environment\n got %q\nwant %q", got, want)
	}
}

func uidOf(t *testing.T) uint32 { return uint32(os.Getuid()) }

// TestKeyEnvironmentPatterns: the key's environment= (which auth let
// through) is filtered by PermitUserEnvironment's patterns when they are
// set, as OpenSSH's pattern-list form does, and passes whole without them.
func TestKeyEnvironmentPatterns(t *testing.T) {
	p := self(t)
	p.Environment = []string{"LANG=C", "LC_ALL=C", "LD_PRELOAD=/evil.so"}
	show := `echo "${LANG-unset} ${LC_ALL-unset} ${LD_PRELOAD-unset}"`
	for _, tc := range []struct {
		patterns []string
		want     string
	}{
		{[]string{"LANG", "LC_*", "!LC_ALL"}, "C unset unset\n"},
		{[]string{"*"}, "C C /evil.so\n"},
		{nil, "C C /evil.so\n"},
	} {
		ch := run(t, startClient(t, &Config{PermitUserEnvironment: tc.patterns}, p), show, nil)
		if got := ch.stdout.String(); got != tc.want {
			t.Errorf("PermitUserEnvironment %q: %q, want %q", tc.patterns, got, tc.want)
		}
	}
}

func TestUserEnvironmentOff(t *testing.T) {
	p := self(t)
	home := fakeHome(t, p)
	os.WriteFile(filepath.Join(home, ".ssh", "environment"), []byte("USERENV=file\n"), 0o600)
	ch := run(t, startClient(t, nil, p), `echo "${USERENV-unset}"`, nil)
	if got := ch.stdout.String(); got != "unset\n" {
		t.Errorf("~/.ssh/environment read without PermitUserEnvironment: %q", got)
	}
}

func TestParseEnvironmentFile(t *testing.T) {
	got, err := parseEnvironmentFile([]byte("A=1\n\t# c\n\nB=two=2\r\n=x\nnoequals\nC=\x00\nD=4"), []string{"*"})
	want := []string{"A=1", "B=two=2", "D=4"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parse = %q, %v; want %q", got, err, want)
	}
	if _, err := parseEnvironmentFile([]byte(strings.Repeat("A=1\n", maxEnvFileLines+1)), []string{"*"}); err == nil {
		t.Errorf("%d lines accepted", maxEnvFileLines+1)
	}
}

func TestLoginDefsUmask(t *testing.T) {
	for in, want := range map[string]fs.FileMode{
		"UMASK\t\t027\n":                            0o27,
		"# UMASK 077\nUMASK 002\n":                  0o2,
		"UMASK 0022\nUMASK bad\n":                   0o22,
		strings.Repeat("x", 9000) + "\nUMASK 077\n": 0o77,
	} {
		m, ok := parseLoginDefsUmask(strings.NewReader(in))
		if !ok || m != want {
			t.Errorf("%.20q: %o %v, want %o", in, m, ok, want)
		}
	}
	if _, ok := parseLoginDefsUmask(strings.NewReader("UMASK 0999\n")); ok {
		t.Errorf("bad UMASK accepted")
	}
	dir := t.TempDir()
	if m := loginDefsUmask(filepath.Join(dir, "none")); m != 0o22 {
		t.Errorf("missing login.defs: %o", m)
	}
	// Read once, then again only when the file changes.
	defs := filepath.Join(dir, "login.defs")
	for i, c := range []struct {
		text string
		want fs.FileMode
	}{{"UMASK 027\n", 0o27}, {"UMASK 027\n", 0o27}, {"# none\nUMASK 077\n", 0o77}, {"", 0o22}} {
		if err := os.WriteFile(defs, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if m := loginDefsUmask(defs); m != c.want {
			t.Errorf("step %d, login.defs %q: umask %o, want %o", i, c.text, m, c.want)
		}
	}
}

func TestSessionUmask(t *testing.T) {
	m := fs.FileMode(0o077)
	ch := run(t, startClient(t, &Config{Umask: &m}, self(t)), "umask", nil)
	if got := strings.TrimSpace(ch.stdout.String()); got != "0077" {
		t.Errorf("umask %q, want 0077", got)
	}
}

func TestForceCommandPrecedence(t *testing.T) {
	p := self(t)
	p.ForceCommand = "echo key"
	c := startClient(t, &Config{ForceCommand: `echo "config:$SSH_ORIGINAL_COMMAND"`}, p)
	if got := run(t, c, "asked", nil).stdout.String(); got != "config:asked\n" {
		t.Errorf("ForceCommand: %q", got)
	}
	ch := c.session(t)
	ch.req("shell", true, nil)
	ch.sendEOF()
	ch.waitClosed(t)
	if got := ch.stdout.String(); got != "config:\n" {
		t.Errorf("ForceCommand for a shell: %q", got)
	}
}

func TestPermitTTYNo(t *testing.T) {
	c := startClient(t, &Config{NoTTY: true}, self(t))
	ch := c.session(t)
	if ch.req("pty-req", true, ptyPayload("xterm", 80, 24, nil)) {
		t.Errorf("pty-req granted with PermitTTY no")
	}
}

func TestUserRCAndSystemRC(t *testing.T) {
	p := self(t)
	home := fakeHome(t, p)
	sys := filepath.Join(t.TempDir(), "sshrc")
	old := systemRC
	systemRC = sys
	defer func() { systemRC = old }()
	os.WriteFile(sys, []byte("echo system-rc\n"), 0o644)
	c := startClient(t, nil, p)
	if got := run(t, c, "echo cmd", nil).stdout.String(); got != "system-rc\ncmd\n" {
		t.Errorf("with /etc/ssh/sshrc: %q", got)
	}
	os.WriteFile(filepath.Join(home, ".ssh", "rc"), []byte("echo user-rc\n"), 0o644)
	if got := run(t, c, "echo cmd", nil).stdout.String(); got != "user-rc\ncmd\n" {
		t.Errorf("with ~/.ssh/rc: %q", got)
	}
	c = startClient(t, &Config{NoUserRC: true}, p)
	if got := run(t, c, "echo cmd", nil).stdout.String(); got != "system-rc\ncmd\n" {
		t.Errorf("PermitUserRC no: %q", got)
	}
	p2 := *p
	p2.NoUserRC = true
	c = startClient(t, nil, &p2)
	if got := run(t, c, "echo cmd", nil).stdout.String(); got != "system-rc\ncmd\n" {
		t.Errorf("no-user-rc: %q", got)
	}
}

// fakeRecorder records logins for TestLoginRecordsAndMotd.
type fakeRecorder struct {
	mu      sync.Mutex
	logins  []LoginRecord
	logouts []LoginRecord
}

func (f *fakeRecorder) Login(r LoginRecord) (LastLogin, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logins = append(f.logins, r)
	return LastLogin{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local), Host: "192.0.2.7"}, nil
}

func (f *fakeRecorder) Logout(r LoginRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logouts = append(f.logouts, r)
	return nil
}

func TestLoginRecordsAndMotd(t *testing.T) {
	p := self(t)
	home := fakeHome(t, p)
	motd := filepath.Join(t.TempDir(), "motd")
	os.WriteFile(motd, []byte("Welcome\nto the test\n"), 0o644)
	old := motdPath
	motdPath = motd
	defer func() { motdPath = old }()
	rec := &fakeRecorder{}
	c := startClient(t, &Config{Sessions: rec}, p)
	shell := func() string {
		ch := c.session(t)
		ch.req("pty-req", true, ptyPayload("xterm", 80, 24, nil))
		ch.req("shell", true, nil)
		ch.write([]byte("exit 0\n"))
		ch.waitClosed(t)
		return ch.stdout.String()
	}
	out := shell()
	want := "Last login: Fri Jan  2 03:04:05 2026 from 192.0.2.7\r\nWelcome\r\nto the test\r\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("login output %q, want it to start with %q", out, want)
	}
	rec.mu.Lock()
	if len(rec.logins) != 1 || len(rec.logouts) != 1 || rec.logins[0].PID == 0 ||
		!strings.HasPrefix(rec.logins[0].TTY, "/dev/pts/") || rec.logouts[0] != rec.logins[0] {
		t.Errorf("records: logins %+v logouts %+v", rec.logins, rec.logouts)
	}
	rec.mu.Unlock()
	os.WriteFile(filepath.Join(home, ".hushlogin"), nil, 0o644)
	if out := shell(); strings.Contains(out, "Last login") || strings.Contains(out, "Welcome") {
		t.Errorf("~/.hushlogin ignored: %q", out)
	}
	// A command on a pty is recorded but prints nothing.
	os.Remove(filepath.Join(home, ".hushlogin"))
	ch := c.session(t)
	ch.req("pty-req", true, ptyPayload("xterm", 80, 24, nil))
	ch.exec("echo hi")
	ch.waitClosed(t)
	if out := ch.stdout.String(); strings.Contains(out, "Welcome") {
		t.Errorf("motd for a command: %q", out)
	}
	rec.mu.Lock()
	if len(rec.logins) != 3 {
		t.Errorf("%d logins recorded, want 3", len(rec.logins))
	}
	rec.mu.Unlock()
}

func TestPrintMotdAndLastLogNo(t *testing.T) {
	p := self(t)
	fakeHome(t, p)
	motd := filepath.Join(t.TempDir(), "motd")
	os.WriteFile(motd, []byte("Welcome\n"), 0o644)
	old := motdPath
	motdPath = motd
	defer func() { motdPath = old }()
	c := startClient(t, &Config{Sessions: &fakeRecorder{}, NoMotd: true, NoLastLog: true}, p)
	ch := c.session(t)
	ch.req("pty-req", true, ptyPayload("xterm", 80, 24, nil))
	ch.req("shell", true, nil)
	ch.write([]byte("exit 0\n"))
	ch.waitClosed(t)
	if out := ch.stdout.String(); strings.Contains(out, "Welcome") || strings.Contains(out, "Last login") {
		t.Errorf("PrintMotd no / PrintLastLog no: %q", out)
	}
}

func TestChannelTimeout(t *testing.T) {
	cfg := &Config{ChannelTimeouts: []ChannelTimeout{{Type: "direct-*", Timeout: time.Hour}, {Type: "sess*", Timeout: 300 * time.Millisecond}}}
	c := startClient(t, cfg, self(t))
	start := time.Now()
	ch := c.session(t)
	ch.exec("sleep 20")
	ch.waitClosed(t)
	if d := time.Since(start); d >= 20*time.Second {
		t.Errorf("idle session closed after %v, when its command ended, not at its timeout", d)
	}
	// Traffic keeps a channel open past its timeout.
	ch = c.session(t)
	ch.exec("cat")
	for range 8 {
		ch.write([]byte("tick\n"))
		time.Sleep(100 * time.Millisecond)
	}
	ch.sendEOF()
	ch.waitClosed(t)
	if got := ch.stdout.String(); got != strings.Repeat("tick\n", 8) {
		t.Errorf("busy channel: %q", got)
	}
}

func TestChannelTimeoutMatch(t *testing.T) {
	s := (&Config{ChannelTimeouts: []ChannelTimeout{{"global", time.Minute}, {"x11-*", time.Second}, {"*", 2 * time.Second}}}).settings()
	for kind, want := range map[string]time.Duration{"x11": time.Second, "session": 2 * time.Second,
		"auth-agent@openssh.com": 2 * time.Second, "unknown": 0} {
		if got := s.channelTimeout(kind, ""); got != want {
			t.Errorf("%s: %v, want %v", kind, got, want)
		}
	}
	s9 := (&Config{ChannelTimeouts: []ChannelTimeout{{"session:shell", time.Second}, {"session:subsystem:*", 3 * time.Second}}}).settings()
	for sub, want := range map[string]time.Duration{"": 0, "session:shell": time.Second, "session:command": 0, "session:subsystem:sftp": 3 * time.Second} {
		if got := s9.channelTimeout("session", sub); got != want {
			t.Errorf("OpenSSH 9 name %q: %v, want %v", sub, got, want)
		}
	}
	if s.globalTimeout() != time.Minute {
		t.Errorf("global timeout %v", s.globalTimeout())
	}
}

func TestGlobalChannelTimeout(t *testing.T) {
	c := startClient(t, &Config{ChannelTimeouts: []ChannelTimeout{{"global", 300 * time.Millisecond}}}, self(t))
	a, b := c.session(t), c.session(t)
	a.exec("sleep 20")
	b.exec("sleep 20")
	a.waitClosed(t)
	b.waitClosed(t)
}

func TestUnusedConnectionTimeout(t *testing.T) {
	c := startClient(t, &Config{UnusedConnectionTimeout: 300 * time.Millisecond}, self(t))
	ch := c.session(t)
	ch.exec("sleep 0.6")
	ch.waitClosed(t) // open channels keep the connection
	err := c.wait(t)
	var pe *ProtocolError
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "unused connection") {
		t.Errorf("Serve returned %v, want an unused-connection timeout", err)
	}
}

// TestBigDataPacketDropped: data beyond the announced maximum packet is
// dropped and the connection goes on, as OpenSSH.
func TestBigDataPacketDropped(t *testing.T) {
	c := startClient(t, &Config{MaxPacket: 1024}, self(t))
	ch := c.session(t)
	ch.exec("cat")
	ch.mu.Lock()
	remote := ch.remote
	ch.mu.Unlock()
	c.send(wire.AppendBytes(appendChannelMsg(nil, wire.MsgChannelData, remote), make([]byte, 2000)))
	ch.write([]byte("small"))
	ch.sendEOF()
	ch.waitClosed(t)
	if got := ch.stdout.String(); got != "small" {
		t.Errorf("cat got %q", got)
	}
	c.checkFaults(t)
}

// TestHandlerPanic: a panicking handler ends its channel; the connection
// keeps serving.
func TestHandlerPanic(t *testing.T) {
	srv, cli := memPipe()
	c := &client{t: t, pc: cli, server: srv, serveErr: make(chan error, 1), chans: map[uint32]*cchan{},
		globals: make(chan byte, 16), done: make(chan struct{}), replies: make(chan []byte, 64), incoming: make(chan incomingChan, 64)}
	h := func(ch *channel, _ []byte) {
		if ch.kind == "boom" {
			var m map[string]int
			m["x"]++ // panics
		}
		echoHandler(ch, nil)
	}
	go func() { c.serveErr <- serve(t.Context(), srv, self(t), nil, h) }()
	go c.loop()
	t.Cleanup(func() { c.pc.Close(); c.wait(t) })
	if _, err := c.open("boom", 1<<20, 32768, nil); err == nil {
		t.Logf("boom opened before the panic") // the handler panicked before confirming
	}
	ch, err := c.open("echo", 1<<20, 32768, nil)
	if err != nil {
		t.Fatalf("connection dead after a handler panic: %v", err)
	}
	ch.write([]byte("still here"))
	ch.sendEOF()
	ch.waitClosed(t)
	if !strings.Contains(ch.stdout.String(), "still here") {
		t.Errorf("echo %q", ch.stdout.String())
	}
}
