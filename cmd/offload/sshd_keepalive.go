package main

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TCP keepalives as OpenSSH's sshd sets them: SO_KEEPALIVE on an accepted
// connection when TCPKeepAlive is yes (the default), with the system's
// timing (net.ipv4.tcp_keepalive_time, 2 hours by default), and nothing
// when it is no. Go's default for accepted connections is on, with a
// 15 s idle time: every idle connection probed four times a minute, and
// one whose client went away dropped after about two and a half minutes.

// listenConfig opens the daemon's listeners with Go's keepalives off.
var listenConfig = net.ListenConfig{KeepAlive: -1}

// keepAlive turns SO_KEEPALIVE on when on is set; otherwise it leaves the
// socket as it came (inetd's may have it on, and OpenSSH leaves it too).
func keepAlive(nc net.Conn, on bool) {
	if tc, ok := nc.(*net.TCPConn); ok && on {
		tc.SetKeepAlive(true)
	}
}

// plainKeepAliveListener is a listener net.FileListener made (a socket
// systemd passed): Go has no way to open it with keepalives off, so each
// accepted connection is put back as the kernel made it, keepalives off
// and the system's timing, before keepAlive applies TCPKeepAlive.
type plainKeepAliveListener struct{ *net.TCPListener }

func (l plainKeepAliveListener) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	t := systemKeepAlive()
	c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: false, Idle: t.Idle, Interval: t.Interval, Count: t.Count})
	return c, nil
}

// systemKeepAlive is the kernel's keepalive timing (Linux's defaults where
// /proc/sys cannot be read).
var systemKeepAlive = sync.OnceValue(func() net.KeepAliveConfig {
	sysctl := func(name string, def int) int {
		b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
		if err != nil {
			return def
		}
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
			return v
		}
		return def
	}
	return net.KeepAliveConfig{
		Idle:     time.Duration(sysctl("tcp_keepalive_time", 7200)) * time.Second,
		Interval: time.Duration(sysctl("tcp_keepalive_intvl", 75)) * time.Second,
		Count:    sysctl("tcp_keepalive_probes", 9),
	}
})
