package main

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// TestIPQoSInSessions: a session's connection carries IPQoS's first value
// when it has a pty and the second when it has none, as OpenSSH's does,
// separated and in process. The session runs ss(8) on its own connection
// (the only established one on the port) and reports its TOS.
func TestIPQoSInSessions(t *testing.T) {
	testenv.LookPath(t, "ss", "apt-get install iproute2")
	cl := newOpenSSHClient(t)
	tosRE := regexp.MustCompile(`tos:(0x[0-9a-f]+|0)\b`)
	for _, c := range []struct {
		conf     string
		pty, tty string // the TOS ss shows with a pty and without
	}{
		{"IPQoS af21 cs1", "0x48", "0x20"},
		{"", "0xb8", "0"}, // the default, ef cs0
		{"IPQoS af21 cs1\nPrivilegeSeparation no", "0x48", "0x20"},
	} {
		addr, port, stop := startClientDaemon(t, cl, c.conf)
		ss := []string{"ss", "-tn", "--tos", "state", "established", fmt.Sprintf("'( sport = :%d )'", port)}
		for _, s := range []struct {
			opts []string
			want string
		}{{[]string{"-tt"}, c.pty}, {[]string{"-T"}, c.tty}} {
			out, stderr, err := cl.run(t, addr, "", nil, s.opts, ss...)
			m := tosRE.FindStringSubmatch(out)
			if err != nil || m == nil {
				t.Fatalf("%q %v: ss in the session: %v %s\n%s", c.conf, s.opts, err, stderr, out)
			}
			if m[1] != s.want {
				t.Errorf("%q, session %v: TOS %s, want %s", c.conf, s.opts, m[1], s.want)
			}
		}
		stop()
	}
}
