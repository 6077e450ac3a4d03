package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/rawio"
	"github.com/offload/offload/sshd/config"
)

// keepAliveState reads SO_KEEPALIVE and TCP_KEEPIDLE (seconds) of c.
func keepAliveState(t *testing.T, c net.Conn) (on bool, idle int) {
	t.Helper()
	ka, ok := rawio.KeepAliveOf(c.(*net.TCPConn))
	if !ok {
		t.Fatal("cannot read the keepalive options")
	}
	return ka.Enable, int(ka.Idle / time.Second)
}

// acceptOne dials l and returns the server's side of the connection.
func acceptOne(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	cc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestKeepAliveAsOpenSSH: an accepted connection has keepalives off until
// TCPKeepAlive turns them on, and then with the system's idle time (2 hours
// by default), not Go's 15 s; the same for a socket systemd passed.
func TestKeepAliveAsOpenSSH(t *testing.T) {
	sysIdle := int(systemKeepAlive().Idle / time.Second)
	ls, _, err := openListeners([]string{"tcp 127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ls[0].Close()
	goDefault, err := net.Listen("tcp", "127.0.0.1:0") // what net.FileListener gives too
	if err != nil {
		t.Fatal(err)
	}
	defer goDefault.Close()
	for name, l := range map[string]net.Listener{"own": ls[0], "systemd": plainKeepAliveListener{goDefault.(*net.TCPListener)}} {
		c := acceptOne(t, l)
		if on, idle := keepAliveState(t, c); on || idle != sysIdle {
			t.Errorf("%s listener: accepted with keepalive %v, idle %d s; want off, %d s", name, on, idle, sysIdle)
		}
		keepAlive(c, false)
		if on, _ := keepAliveState(t, c); on {
			t.Errorf("%s listener: TCPKeepAlive no turned keepalives on", name)
		}
		keepAlive(c, true)
		if on, idle := keepAliveState(t, c); !on || idle != sysIdle {
			t.Errorf("%s listener: TCPKeepAlive yes gave keepalive %v, idle %d s; want on, %d s", name, on, idle, sysIdle)
		}
	}
}

// TestTCPKeepAliveInSessions: during a session, the connection's socket
// has keepalives as TCPKeepAlive says, as OpenSSH's does (SO_KEEPALIVE
// with the system's timing, or none), separated (the socket passed from
// the daemon to a worker to the post-auth process, each adopting it) and
// in process. The session reads the kernel's table (/proc/net/tcp) for
// the server's side of its own connection.
func TestTCPKeepAliveInSessions(t *testing.T) {
	cl := newOpenSSHClient(t)
	sysIdle := int(systemKeepAlive().Idle / time.Second)
	for _, c := range []struct {
		conf string
		want bool
	}{
		{"TCPKeepAlive yes", true},
		{"TCPKeepAlive no", false},
		{"TCPKeepAlive yes\nPrivilegeSeparation no", true},
		{"TCPKeepAlive no\nPrivilegeSeparation no", false},
	} {
		addr, port, stop := startClientDaemon(t, cl, c.conf)
		// The keepalive timer shows only while no data waits for its ACK
		// (a retransmit timer takes the field): the session's set-up is
		// acknowledged during the sleep, and the whole table is read
		// before any of it is sent (a busy machine's table is longer than
		// one read, and cat would send the first part while it reads on).
		out, stderr, err := cl.run(t, addr, "", nil, nil, `sleep 0.5; t=$(cat /proc/net/tcp); echo "$t"`)
		stop()
		if err != nil {
			t.Fatalf("%q: %v: %s", c.conf, err, stderr)
		}
		timer, secs, ok := serverTimer(out, port)
		if !ok {
			t.Fatalf("%q: no established socket on port %d in /proc/net/tcp:\n%s", c.conf, port, out)
		}
		on := timer == 2 // the keepalive timer
		if on != c.want || (on && secs < sysIdle-120) {
			t.Errorf("%q: keepalive timer %v, due in %d s; want %v, due in about %d s\n%s", c.conf, on, secs, c.want, sysIdle, out)
		}
	}
}

// serverTimer finds the established socket with local port port in a
// /proc/net/tcp table and returns its timer kind and seconds to expiry.
func serverTimer(table string, port int) (timer, secs int, ok bool) {
	local := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[1], local) || f[3] != "01" {
			continue
		}
		kind, when, _ := strings.Cut(f[5], ":")
		k, err1 := strconv.ParseInt(kind, 16, 32)
		w, err2 := strconv.ParseInt(when, 16, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		return int(k), int(w / 100), true // USER_HZ
	}
	return 0, 0, false
}

// startClientDaemon starts the daemon on a free port of 127.0.0.1 for cl's
// key, with extra configuration lines conf, and returns its address, its
// port and a function that stops it.
func startClientDaemon(t *testing.T, cl *opensshClient, conf string) (addr string, port int, stop func()) {
	t.Helper()
	port = freePorts(t, 1)[0]
	cfg := writeConfig(t, fmt.Sprintf("ListenAddress 127.0.0.1:%d\nStrictModes no\nAuthorizedKeysFile %s\n%s\n",
		port, cl.authorizedKeys, conf))
	_, cancel, done := startTestDaemon(t, cfg)
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	waitDial(t, "tcp", addr)
	return addr, port, func() { cancel(); <-done }
}

// TestClientAliveCountMaxZero: sshd_config's ClientAliveCountMax 0 keeps
// probing and never disconnects (OpenSSH 8.2 and later); the connection
// layer's zero value means its default, so 0 is translated to a
// negative count, and other values pass as they are.
func TestClientAliveCountMaxZero(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int
	}{{"", 3}, {"ClientAliveCountMax 0\n", -1}, {"ClientAliveCountMax 5\n", 5}} {
		path := writeConfig(t, "ClientAliveInterval 15\n"+tc.line)
		c, err := config.Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := connectionConfig(c, nil).ClientAliveCountMax; got != tc.want {
			t.Errorf("%q: connection.Config.ClientAliveCountMax %d, want %d", tc.line, got, tc.want)
		}
	}
}
