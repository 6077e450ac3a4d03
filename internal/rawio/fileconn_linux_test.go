package rawio

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// keepAliveState reads SO_KEEPALIVE and TCP_KEEPIDLE (seconds) of c.
func keepAliveState(t *testing.T, c net.Conn) (on bool, idle int) {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ka int
	rc.Control(func(fd uintptr) {
		if ka, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE); err == nil {
			idle, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ka != 0, idle
}

// TestFileConnKeepsKeepAlive: a socket adopted with FileConn keeps its
// keepalive setting (net.FileConn turns it on at 15 s).
func TestFileConnKeepsKeepAlive(t *testing.T) {
	l, err := (&net.ListenConfig{KeepAlive: -1}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, want := range []net.KeepAliveConfig{
		{Enable: false},
		{Enable: true, Idle: 7000 * time.Second, Interval: 70 * time.Second, Count: 5},
	} {
		cc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		sc, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		if want.Enable {
			sc.(*net.TCPConn).SetKeepAliveConfig(want)
		}
		f, err := sc.(*net.TCPConn).File()
		if err != nil {
			t.Fatal(err)
		}
		c, err := FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		on, idle := keepAliveState(t, c)
		if on != want.Enable || (on && idle != 7000) {
			t.Errorf("adopted with keepalive %v, idle %d s; want %v (idle 7000 s when on)", on, idle, want.Enable)
		}
	}
}
