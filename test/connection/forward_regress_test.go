package connection_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/connection"
)

// setKeyOptions rewrites authorized_keys with options before the key.
func (f *fixture) setKeyOptions(t *testing.T, opts string) {
	t.Helper()
	line := string(ssh.MarshalAuthorizedKey(f.signer.PublicKey()))
	if opts != "" {
		line = opts + " " + line
	}
	if err := os.WriteFile(filepath.Join(f.dir, "authorized_keys"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestForceCommandLikeOpenSSH ports OpenSSH's forcecommand regress test:
// the key's command= and sshd_config's ForceCommand replace the client's
// command (ForceCommand wins), SSH_ORIGINAL_COMMAND carries it, and a
// forced internal-sftp refuses other sessions with OpenSSH's message.
func TestForceCommandLikeOpenSSH(t *testing.T) {
	f := newFixture(t, &connection.Config{})
	f.setKeyOptions(t, `command="echo key:$SSH_ORIGINAL_COMMAND"`)
	out, _, code := f.ssh(t, nil, nil, "asked")
	if out != "key:asked\n" || code != 0 {
		t.Errorf("command=: %q %d", out, code)
	}
	cases := map[string]struct{ force, cmd string }{
		"config wins":   {`echo "cfg:$SSH_ORIGINAL_COMMAND"`, "asked"},
		"internal-sftp": {"internal-sftp", "true"},
	}
	for name, tc := range cases {
		g := newFixtureSharing(t, f, &connection.Config{ForceCommand: tc.force}) // same key, with command=
		ref := g.reference(t, "ForceCommand "+tc.force)
		gout, gerr, gcode := g.ssh(t, nil, nil, tc.cmd)
		rout, rerr, rcode := ref.ssh(t, nil, nil, tc.cmd)
		if gout != rout || gcode != rcode {
			t.Errorf("%s: offload %q (%q) %d, OpenSSH %q (%q) %d", name, gout, gerr, gcode, rout, rerr, rcode)
		}
	}
	g := newFixtureSharing(t, f, &connection.Config{ForceCommand: "internal-sftp"})
	if out, err := g.tool(t, "sftp", "pwd\n", "-b", "-", g.user+"@127.0.0.1"); err != nil {
		t.Errorf("sftp under ForceCommand internal-sftp: %v %s", err, out)
	}
}

// newFixtureSharing starts another server authorizing f's key with f's
// authorized_keys file.
func newFixtureSharing(t *testing.T, f *fixture, conn *connection.Config) *fixture {
	t.Helper()
	g := &fixture{dir: f.dir, key: f.key, user: f.user, signer: f.signer, logs: &syncBuffer{}}
	conn.AcceptEnv = append(conn.AcceptEnv, "SHLVL")
	g.start(t, conn)
	return g
}

// TestRemoteForwardLikeOpenSSH ports the remote half of OpenSSH's
// forwarding test: ssh -R with an allocated port (announced by the
// client), a fixed port, and a Unix socket on the server.
func TestRemoteForwardLikeOpenSSH(t *testing.T) {
	f := newFixture(t, nil)
	echo := echoServer(t)
	for _, srv := range []*fixture{f, f.reference(t)} {
		b := srv.sshBackground(t, nil, "-N", "-o", "ExitOnForwardFailure=yes", "-R", "0:"+echo, "")
		m := b.waitLine(t, `Allocated port (\d+) for remote forward to`)
		roundTrip(t, dialRetry(t, "tcp", "127.0.0.1:"+m[1]), "allocated "+srv.port)
		port := testenv.FreePort(t)
		srv.sshBackground(t, nil, "-N", "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:"+port+":"+echo, "")
		roundTrip(t, dialRetry(t, "tcp", "127.0.0.1:"+port), "fixed "+srv.port)
		sock := filepath.Join(t.TempDir(), "fwd.sock")
		srv.sshBackground(t, nil, "-N", "-o", "ExitOnForwardFailure=yes", "-R", sock+":"+echo, "")
		roundTrip(t, dialRetry(t, "unix", sock), "unix "+srv.port)
		if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("port %s: forwarded socket mode %v %v, want 0600 (StreamLocalBindMask)", srv.port, fi.Mode(), err)
		}
	}
}

// unixEcho listens on a Unix socket and echoes.
func unixEcho(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "echo.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return path
}

// TestLocalForwardToSocket: ssh -L from a local port to a Unix socket on
// the server (direct-streamlocal@openssh.com).
func TestLocalForwardToSocket(t *testing.T) {
	f := newFixture(t, nil)
	sock := unixEcho(t)
	port := testenv.FreePort(t)
	f.sshBackground(t, nil, "-N", "-o", "ExitOnForwardFailure=yes", "-L", "127.0.0.1:"+port+":"+sock, "")
	roundTrip(t, dialRetry(t, "tcp", "127.0.0.1:"+port), "to a socket")
}

// TestForwardingRefusedLikeOpenSSH: the refusals print what OpenSSH's
// client prints for OpenSSH's server.
func TestForwardingRefusedLikeOpenSSH(t *testing.T) {
	echo := echoServer(t)
	for _, tc := range []struct {
		name, keyword string
		cfg           *connection.Config
		args          []string
	}{
		{"AllowTcpForwarding local -R", "AllowTcpForwarding local", &connection.Config{AllowTCPForwarding: connection.ForwardLocal}, []string{"-R", "0:" + echo}},
		{"DisableForwarding -R", "DisableForwarding yes", &connection.Config{DisableForwarding: true}, []string{"-R", "0:" + echo}},
		{"PermitListen -R", "PermitListen 1", &connection.Config{PermitListen: []string{"1"}}, []string{"-R", "0:" + echo}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg)
			ref := f.reference(t, tc.keyword)
			args := append(append([]string{"-o", "ExitOnForwardFailure=yes"}, tc.args...), "true")
			_, gerr, gcode := f.ssh(t, nil, nil, args...)
			_, rerr, rcode := ref.ssh(t, nil, nil, args...)
			if gcode != rcode || !strings.Contains(gerr, "forwarding failed") || firstLine(gerr) != firstLine(rerr) {
				t.Errorf("offload %d %q, OpenSSH %d %q", gcode, gerr, rcode, rerr)
			}
		})
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestDynamicForward ports OpenSSH's dynamic-forward test: ssh -D and a
// SOCKS5 client (curl) through it to a web server.
func TestDynamicForward(t *testing.T) {
	curl := testenv.LookPath(t, "curl", "apt-get install curl")
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "via socks") }))
	defer web.Close()
	f := newFixture(t, nil)
	port := testenv.FreePort(t)
	f.sshBackground(t, nil, "-N", "-o", "ExitOnForwardFailure=yes", "-D", "127.0.0.1:"+port, "")
	waitPort(t, port)
	for _, proto := range []string{"--socks5", "--socks4"} {
		out, err := runTool(t, nil, curl, "-s", "--max-time", "10", proto, "127.0.0.1:"+port, web.URL)
		if err != nil || out != "via socks" {
			t.Errorf("curl %s: %q %v", proto, out, err)
		}
	}
}

// TestForwardControlAndMultiplex ports OpenSSH's multiplex and
// forward-control tests: sessions through a ControlMaster, forwardings
// added and cancelled with -O, and the master stopped.
func TestForwardControlAndMultiplex(t *testing.T) {
	f := newFixture(t, nil)
	ctl := filepath.Join(t.TempDir(), "ctl")
	f.sshBackground(t, nil, "-N", "-M", "-S", ctl, "-o", "ControlPersist=no", "")
	if !testenv.WaitUntil(t, func() bool { _, err := os.Stat(ctl); return err == nil }) {
		t.Fatalf("the ControlMaster made no socket %s before the deadline", ctl)
	}
	mux := func(args ...string) (string, string, int) {
		return f.ssh(t, nil, nil, append([]string{"-S", ctl}, args...)...)
	}
	if _, errOut, code := mux("-O", "check", ""); code != 0 {
		t.Fatalf("-O check: %d %s", code, errOut)
	}
	for i := range 3 {
		if out, _, code := mux("echo session-" + strconv.Itoa(i)); out != "session-"+strconv.Itoa(i)+"\n" || code != 0 {
			t.Errorf("multiplexed session %d: %q %d", i, out, code)
		}
	}
	if out, _, code := mux("exit 7"); code != 7 {
		t.Errorf("multiplexed exit status: %q %d", out, code)
	}
	echo := echoServer(t)
	out, errOut, code := mux("-O", "forward", "-R", "0:"+echo, "")
	port := strings.TrimSpace(out)
	if code != 0 || port == "" {
		t.Fatalf("-O forward -R: %q %q %d", out, errOut, code)
	}
	roundTrip(t, dialRetry(t, "tcp", "127.0.0.1:"+port), "mux remote")
	lport := testenv.FreePort(t)
	if _, errOut, code := mux("-O", "forward", "-L", "127.0.0.1:"+lport+":"+echo, ""); code != 0 {
		t.Fatalf("-O forward -L: %q %d", errOut, code)
	}
	roundTrip(t, dialRetry(t, "tcp", "127.0.0.1:"+lport), "mux local")
	if _, errOut, code := mux("-O", "cancel", "-R", "0:"+echo, ""); code != 0 {
		t.Errorf("-O cancel -R: %q %d", errOut, code)
	}
	if _, _, code := mux("-O", "exit", ""); code != 0 {
		t.Errorf("-O exit: %d", code)
	}
}
