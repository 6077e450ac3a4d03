package connection

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// echoServer listens on loopback and echoes every connection.
func echoServer(t *testing.T) (string, uint32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(conn, conn); conn.Close() }()
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	return host, uint32(p)
}

func directPayload(host string, port uint32) []byte {
	b := wire.AppendUint32(wire.AppendString(nil, host), port)
	return wire.AppendUint32(wire.AppendString(b, "10.0.0.1"), 5555)
}

func TestDirectTCPIP(t *testing.T) {
	host, port := echoServer(t)
	c := startClient(t, nil, self(t))
	ch, err := c.open("direct-tcpip", 1<<20, 32768, directPayload(host, port))
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("ping "), 50000)
	ch.write(msg)
	ch.sendEOF()
	ch.waitClosed(t)
	if !bytes.Equal(ch.stdout.Bytes(), msg) {
		t.Errorf("echo returned %d bytes, want %d", ch.stdout.Len(), len(msg))
	}
	c.checkFaults(t)
}

func TestDirectTCPIPRefused(t *testing.T) {
	host, port := echoServer(t)
	cases := map[string]struct {
		cfg *Config
		p   func(*perm.Permissions)
	}{
		"AllowTcpForwarding no": {&Config{AllowTCPForwarding: ForwardNone}, nil},
		"remote only":           {&Config{AllowTCPForwarding: ForwardRemote}, nil},
		"no-port-forwarding":    {nil, func(p *perm.Permissions) { p.NoPortForwarding = true }},
		"permitopen mismatch":   {nil, func(p *perm.Permissions) { p.PermitOpen = []string{"127.0.0.1:1"} }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := self(t)
			if tc.p != nil {
				tc.p(p)
			}
			c := startClient(t, tc.cfg, p)
			if _, err := c.open("direct-tcpip", 1<<20, 32768, directPayload(host, port)); err == nil {
				t.Errorf("forwarding allowed")
			}
		})
	}
	p := self(t)
	p.PermitOpen = []string{host + ":*"}
	c := startClient(t, nil, p)
	if _, err := c.open("direct-tcpip", 1<<20, 32768, directPayload(host, port)); err != nil {
		t.Errorf("permitopen %s:* refused: %v", host, err)
	}
}

func TestPermitOpen(t *testing.T) {
	cases := []struct {
		list []string
		host string
		port uint32
		ok   bool
	}{
		{nil, "x", 1, true},
		{[]string{}, "x", 1, false},
		{[]string{"any"}, "x", 1, true},
		{[]string{"example.com:22"}, "example.com", 22, true},
		{[]string{"Example.com:22"}, "example.com", 22, false}, // exact, as OpenSSH's open_match
		{[]string{"*:22"}, "example.com", 22, true},
		{[]string{"example.com:*"}, "example.com", 9, true},
		{[]string{"none"}, "x", 1, false},
		{[]string{"example.com:22"}, "example.com", 23, false},
		{[]string{"[::1]:80"}, "::1", 80, true},
		{[]string{"bad"}, "bad", 0, false},
	}
	for _, c := range cases {
		if got := permitOpen(c.list, c.host, c.port); got != c.ok {
			t.Errorf("permitOpen(%v, %s, %d) = %v", c.list, c.host, c.port, got)
		}
	}
}
