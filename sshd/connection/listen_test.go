package connection

import (
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

func fwdPayload(host string, port uint32) []byte {
	return wire.AppendUint32(wire.AppendString(nil, host), port)
}

// nextIncoming waits for a channel the server opens.
func nextIncoming(t *testing.T, c *client) incomingChan {
	t.Helper()
	select {
	case in := <-c.incoming:
		return in
	case <-testenv.Timeout(t):
		t.Fatal("the server opened no channel")
		return incomingChan{}
	}
}

// echoThrough writes msg to conn and checks the client's channel got it,
// then answers through the channel and checks conn gets the answer.
func echoThrough(t *testing.T, conn net.Conn, ch *cchan) {
	t.Helper()
	conn.Write([]byte("to client"))
	var got string
	if !testenv.WaitUntil(t, func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		got = ch.stdout.String()
		return got == "to client"
	}) {
		t.Fatalf("channel got %q", got)
	}
	ch.write([]byte("to server"))
	buf := make([]byte, 9)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "to server" {
		t.Fatalf("socket got %q %v", buf, err)
	}
}

func TestTCPIPForward(t *testing.T) {
	c := startClient(t, nil, self(t))
	r := c.global(t, "tcpip-forward", fwdPayload("localhost", 0))
	if r[0] != wire.MsgRequestSuccess || len(r) != 5 {
		t.Fatalf("tcpip-forward port 0: reply %x", r)
	}
	port := wire.NewReader(r[1:]).Uint32("port")
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	in := nextIncoming(t, c)
	rd := wire.NewReader(in.extra)
	host, p, oh := rd.String("host"), rd.Uint32("port"), rd.String("origin")
	if in.kind != "forwarded-tcpip" || host != "localhost" || p != port || oh != "127.0.0.1" {
		t.Errorf("opened %s %q %d from %q", in.kind, host, p, oh)
	}
	echoThrough(t, conn, in.ch)
	if r := c.global(t, "cancel-tcpip-forward", fwdPayload("localhost", port)); r[0] != wire.MsgRequestSuccess {
		t.Errorf("cancel refused")
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), time.Second); err == nil {
		c.Close()
		t.Errorf("still listening after cancel")
	}
	if r := c.global(t, "cancel-tcpip-forward", fwdPayload("localhost", port)); r[0] != wire.MsgRequestFailure {
		t.Errorf("second cancel accepted")
	}
	c.checkFaults(t)
}

// TestTCPIPForwardRefusals: every reason to refuse, then the connection
// still serves.
func TestTCPIPForwardRefusals(t *testing.T) {
	p := self(t)
	p.PermitListen = []string{"localhost:*"}
	cases := map[string]struct {
		cfg     *Config
		p       *perm.Permissions
		payload []byte
	}{
		"AllowTcpForwarding local": {&Config{AllowTCPForwarding: ForwardLocal}, self(t), fwdPayload("", 0)},
		"DisableForwarding":        {&Config{DisableForwarding: true}, self(t), fwdPayload("", 0)},
		"no-port-forwarding":       {nil, &perm.Permissions{User: self(t).User, NoPortForwarding: true}, fwdPayload("", 0)},
		"PermitListen":             {&Config{PermitListen: []string{"9999"}}, self(t), fwdPayload("localhost", 0)},
		"PermitListen none":        {&Config{PermitListen: []string{"none"}}, self(t), fwdPayload("localhost", 0)},
		"permitlisten=":            {nil, p, fwdPayload("127.0.0.1", 0)},
		"port too big":             {nil, self(t), fwdPayload("", 70000)},
		"truncated":                {nil, self(t), []byte{0, 0, 0, 9, 'l'}},
		"trailing bytes":           {nil, self(t), append(fwdPayload("", 0), 1)},
		"huge":                     {nil, self(t), append(fwdPayload("", 0), make([]byte, 100_000)...)},
	}
	for name, tc := range cases {
		c := startClient(t, tc.cfg, tc.p)
		if r := c.global(t, "tcpip-forward", tc.payload); r[0] != wire.MsgRequestFailure {
			t.Errorf("%s: tcpip-forward accepted", name)
		}
		if out := run(t, c, "echo alive", nil).stdout.String(); out != "alive\n" {
			t.Errorf("%s: connection broken: %q", name, out)
		}
	}
}

func TestListenerBound(t *testing.T) {
	c := startClient(t, &Config{MaxListeners: 3}, self(t))
	ok := 0
	for range 6 {
		if c.global(t, "tcpip-forward", fwdPayload("127.0.0.1", 0))[0] == wire.MsgRequestSuccess {
			ok++
		}
	}
	if ok != 3 {
		t.Errorf("%d listeners granted, want 3", ok)
	}
	if out := run(t, c, "echo alive", nil).stdout.String(); out != "alive\n" {
		t.Errorf("connection broken: %q", out)
	}
}

func TestPrivilegedPort(t *testing.T) {
	m := &mux{cfg: (&Config{}).settings()}
	m.acct.once.Do(func() { m.acct.a = &account{name: "alice", uid: 1000} })
	if why := m.privilegedPort(22); why == "" {
		t.Errorf("port 22 allowed to a user that is not root")
	}
	if why := m.privilegedPort(0); why != "" {
		t.Errorf("port 0 refused: %s", why)
	}
	if why := m.privilegedPort(unprivilegedPortStart()); why != "" {
		t.Errorf("unprivileged port refused: %s", why)
	}
	r := &mux{cfg: m.cfg}
	r.acct.once.Do(func() { r.acct.a = &account{name: "root", uid: 0} })
	if why := r.privilegedPort(22); why != "" {
		t.Errorf("port 22 refused to root: %s", why)
	}
}

func TestPermitListen(t *testing.T) {
	for _, tc := range []struct {
		list []string
		host string
		port uint32
		ok   bool
	}{
		{nil, "x", 1, true},
		{[]string{"any"}, "x", 1, true},
		{[]string{"none"}, "x", 1, false},
		{[]string{"8080"}, "localhost", 8080, true},
		{[]string{"8080"}, "localhost", 8081, false},
		{[]string{"localhost:*"}, "LocalHost", 5, true},
		{[]string{"*.example.com:22"}, "a.example.com", 22, true},
		{[]string{"[::1]:22"}, "::1", 22, true},
		{[]string{"localhost:22"}, "127.0.0.1", 22, false},
	} {
		if got := permitListen(tc.list, tc.host, tc.port); got != tc.ok {
			t.Errorf("permitListen(%v, %s, %d) = %v", tc.list, tc.host, tc.port, got)
		}
	}
}

func TestBindAddrs(t *testing.T) {
	lo := "[127.0.0.1 ::1]"
	for _, tc := range []struct {
		gw   GatewayPorts
		host string
		want string
	}{
		{GatewayNo, "", lo}, {GatewayNo, "*", lo}, {GatewayNo, "10.0.0.1", lo}, {GatewayNo, "127.0.0.1", "[127.0.0.1]"},
		{GatewayNo, "::1", "[::1]"}, {GatewayYes, "localhost", "[]"}, {GatewayYes, "127.0.0.1", "[]"},
		{GatewayClientSpecified, "", "[]"}, {GatewayClientSpecified, "*", "[]"},
		{GatewayClientSpecified, "localhost", lo}, {GatewayClientSpecified, "10.0.0.1", "[10.0.0.1]"},
	} {
		m := &mux{cfg: (&Config{GatewayPorts: tc.gw}).settings()}
		if got := strings.ReplaceAll(strings.Trim(strings.Join(m.bindAddrs(tc.host), " "), " "), "  ", " "); "["+got+"]" != tc.want {
			t.Errorf("GatewayPorts %d, %q: %q, want %s", tc.gw, tc.host, got, tc.want)
		}
	}
}

func TestStreamLocalForward(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s")
	c := startClient(t, nil, self(t))
	if r := c.global(t, "streamlocal-forward@openssh.com", wire.AppendString(nil, path)); r[0] != wire.MsgRequestSuccess {
		t.Fatalf("streamlocal-forward refused")
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %v %v, want a 0600 socket (StreamLocalBindMask 0177)", fi.Mode(), err)
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	in := nextIncoming(t, c)
	if rd := wire.NewReader(in.extra); in.kind != "forwarded-streamlocal@openssh.com" || rd.String("path") != path {
		t.Errorf("opened %s %q", in.kind, in.extra)
	}
	echoThrough(t, conn, in.ch)
	// The same path again fails: the socket exists.
	if r := c.global(t, "streamlocal-forward@openssh.com", wire.AppendString(nil, path)); r[0] != wire.MsgRequestFailure {
		t.Errorf("second forward of the same path accepted")
	}
	if r := c.global(t, "cancel-streamlocal-forward@openssh.com", wire.AppendString(nil, path)); r[0] != wire.MsgRequestSuccess {
		t.Errorf("cancel refused")
	}
}

func TestStreamLocalBindOptions(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale")
	l, _ := net.Listen("unix", stale)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // leaves a socket file behind, as a crashed server would
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("keep"), 0o644)
	c := startClient(t, nil, self(t))
	if c.global(t, "streamlocal-forward@openssh.com", wire.AppendString(nil, stale))[0] != wire.MsgRequestFailure {
		t.Errorf("stale socket replaced without StreamLocalBindUnlink")
	}
	mask := fs.FileMode(0o117)
	c = startClient(t, &Config{StreamLocalBindUnlink: true, StreamLocalBindMask: &mask}, self(t))
	if c.global(t, "streamlocal-forward@openssh.com", wire.AppendString(nil, stale))[0] != wire.MsgRequestSuccess {
		t.Errorf("StreamLocalBindUnlink did not replace the stale socket")
	}
	if fi, _ := os.Lstat(stale); fi.Mode().Perm() != 0o660 {
		t.Errorf("StreamLocalBindMask 0117: mode %v", fi.Mode())
	}
	if c.global(t, "streamlocal-forward@openssh.com", wire.AppendString(nil, file))[0] != wire.MsgRequestFailure {
		t.Errorf("a regular file was replaced")
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("regular file changed")
	}
	c = startClient(t, &Config{AllowStreamLocalForwarding: ForwardLocal}, self(t))
	if c.global(t, "streamlocal-forward@openssh.com", wire.AppendString(nil, filepath.Join(dir, "x")))[0] != wire.MsgRequestFailure {
		t.Errorf("AllowStreamLocalForwarding local allowed a remote forward")
	}
}

func TestDirectStreamLocal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "echo")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		conn, err := l.Accept()
		if err == nil {
			io.Copy(conn, conn)
			conn.Close()
		}
	}()
	payload := wire.AppendUint32(wire.AppendString(wire.AppendString(nil, path), ""), 0)
	c := startClient(t, nil, self(t))
	ch, err := c.open("direct-streamlocal@openssh.com", 1<<20, 32768, payload)
	if err != nil {
		t.Fatal(err)
	}
	ch.write([]byte("over a unix socket"))
	ch.sendEOF()
	ch.waitClosed(t)
	if got := ch.stdout.String(); got != "over a unix socket" {
		t.Errorf("echo %q", got)
	}
	c = startClient(t, &Config{AllowStreamLocalForwarding: ForwardRemote}, self(t))
	if _, err := c.open("direct-streamlocal@openssh.com", 1<<20, 32768, payload); err == nil {
		t.Errorf("AllowStreamLocalForwarding remote allowed direct-streamlocal")
	}
}

func TestAgentForwarding(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	if !ch.req("auth-agent-req@openssh.com", true, nil) {
		t.Fatal("auth-agent-req refused")
	}
	ch.exec(`echo "$SSH_AUTH_SOCK"`)
	ch.sendEOF()
	ch.waitClosed(t)
	sock := strings.TrimSpace(ch.stdout.String())
	if !strings.Contains(sock, "/ssh-") || !strings.Contains(sock, "/agent.") {
		t.Fatalf("SSH_AUTH_SOCK %q", sock)
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory %v %v, want 0700", fi, err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	in := nextIncoming(t, c)
	if in.kind != "auth-agent@openssh.com" || len(in.extra) != 0 {
		t.Errorf("opened %s %q", in.kind, in.extra)
	}
	echoThrough(t, conn, in.ch)
	conn.Close()
	// A second request is refused, but new sessions get the socket.
	ch = c.session(t)
	if ch.req("auth-agent-req@openssh.com", true, nil) {
		t.Errorf("second auth-agent-req accepted")
	}
	if out := run(t, c, `echo "$SSH_AUTH_SOCK"`, nil).stdout.String(); strings.TrimSpace(out) != sock {
		t.Errorf("later session: SSH_AUTH_SOCK %q", out)
	}
	c.pc.Close()
	c.wait(t)
	if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Errorf("agent directory left after the connection: %v", err)
	}
}

func TestAgentForwardingRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg *Config
		p   *perm.Permissions
	}{
		"AllowAgentForwarding no": {&Config{NoAgentForwarding: true}, self(t)},
		"no-agent-forwarding":     {nil, &perm.Permissions{User: self(t).User, NoAgentForwarding: true}},
		"DisableForwarding":       {&Config{DisableForwarding: true}, self(t)},
	} {
		c := startClient(t, tc.cfg, tc.p)
		if c.session(t).req("auth-agent-req@openssh.com", true, nil) {
			t.Errorf("%s: auth-agent-req accepted", name)
		}
	}
}

// fakeXauth is an xauth that records its input.
func fakeXauth(t *testing.T) (prog, log string) {
	dir := t.TempDir()
	prog, log = filepath.Join(dir, "xauth"), filepath.Join(dir, "input")
	os.WriteFile(prog, []byte("#!/bin/sh\necho \"$@\" > "+log+".args\ncat > "+log+"\n"), 0o755)
	return prog, log
}

func x11Payload(single bool, proto, cookie string, screen uint32) []byte {
	b := wire.AppendString(wire.AppendString(wire.AppendBool(nil, single), proto), cookie)
	return wire.AppendUint32(b, screen)
}

func TestX11Forwarding(t *testing.T) {
	xauth, input := fakeXauth(t)
	off := 37
	c := startClient(t, &Config{X11Forwarding: true, XAuthLocation: xauth, X11DisplayOffset: &off}, self(t))
	ch := c.session(t)
	if !ch.req("x11-req", true, x11Payload(true, "MIT-MAGIC-COOKIE-1", "0123abcd", 0)) {
		t.Fatal("x11-req refused")
	}
	ch.exec(`echo "$DISPLAY"; sleep 1`)
	ch.sendEOF()
	var display string
	testenv.WaitUntil(t, func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		display = strings.TrimSpace(ch.stdout.String())
		return display != ""
	})
	if !strings.HasPrefix(display, "localhost:") || !strings.HasSuffix(display, ".0") {
		t.Fatalf("DISPLAY %q", display)
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(display, "localhost:"), ".0"))
	if n < off {
		t.Errorf("display %d below X11DisplayOffset %d", n, off)
	}
	got, _ := os.ReadFile(input)
	want := "remove unix:" + strconv.Itoa(n) + ".0\nadd unix:" + strconv.Itoa(n) + ".0 MIT-MAGIC-COOKIE-1 0123abcd\n"
	if string(got) != want {
		t.Errorf("xauth input %q, want %q", got, want)
	}
	if args, _ := os.ReadFile(input + ".args"); string(args) != "-q -\n" {
		t.Errorf("xauth args %q", args)
	}
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(6000+n))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	in := nextIncoming(t, c)
	if rd := wire.NewReader(in.extra); in.kind != "x11" || rd.String("origin") != "127.0.0.1" {
		t.Errorf("opened %s %q", in.kind, in.extra)
	}
	echoThrough(t, conn, in.ch)
	// single-connection: the display no longer listens.
	if c2, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(6000+n), time.Second); err == nil {
		c2.Close()
		t.Errorf("display still listening after a single connection")
	}
	ch.waitClosed(t)
}

func TestX11Refused(t *testing.T) {
	xauth, _ := fakeXauth(t)
	good := x11Payload(false, "MIT-MAGIC-COOKIE-1", "00ff", 0)
	for name, tc := range map[string]struct {
		cfg     *Config
		p       *perm.Permissions
		payload []byte
	}{
		"X11Forwarding no":   {&Config{XAuthLocation: xauth}, self(t), good},
		"no-x11-forwarding":  {&Config{X11Forwarding: true, XAuthLocation: xauth}, &perm.Permissions{User: self(t).User, NoX11Forwarding: true}, good},
		"no xauth":           {&Config{X11Forwarding: true, XAuthLocation: "/nonexistent/xauth"}, self(t), good},
		"XAuthLocation none": {&Config{X11Forwarding: true, XAuthLocation: "none"}, self(t), good},
		"bad cookie":         {&Config{X11Forwarding: true, XAuthLocation: xauth}, self(t), x11Payload(false, "MIT-MAGIC-COOKIE-1", "00ff\nadd evil", 0)},
		"DisableForwarding":  {&Config{X11Forwarding: true, XAuthLocation: xauth, DisableForwarding: true}, self(t), good},
		"malformed":          {&Config{X11Forwarding: true, XAuthLocation: xauth}, self(t), good[:5]},
	} {
		c := startClient(t, tc.cfg, tc.p)
		if c.session(t).req("x11-req", true, tc.payload) {
			t.Errorf("%s: x11-req accepted", name)
		}
	}
}

func TestForwardedOpenRefusedByClient(t *testing.T) {
	c := startClient(t, nil, self(t))
	c.refuseOpens.Store(true)
	r := c.global(t, "tcpip-forward", fwdPayload("127.0.0.1", 0))
	port := wire.NewReader(r[1:]).Uint32("port")
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	nextIncoming(t, c)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err == nil {
		t.Errorf("read %d bytes from a refused forward", n)
	}
	if out := run(t, c, "echo alive", nil).stdout.String(); out != "alive\n" {
		t.Errorf("connection broken: %q", out)
	}
	c.checkFaults(t)
}
