package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// TestAllowDenyUsersLikeOpenSSH ports OpenSSH's allow-deny-users regress
// test, side by side: each AllowUsers / DenyUsers / AllowGroups /
// DenyGroups configuration (user@address and CIDR patterns, group lists,
// Match Address) runs under offload and under OpenSSH's sshd, and the
// OpenSSH client's login from 127.0.0.1 and 127.0.0.2 must succeed or
// fail the same way under both, and as expected.
func TestAllowDenyUsersLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	sshdBin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	u := newTestUser(t, newOpenSSHClient(t))
	g, err := user.LookupGroupId(fmt.Sprint(u.gid))
	if err != nil {
		t.Fatal(err)
	}
	U, G := u.name, g.Name
	for _, tc := range []struct {
		rules      string
		from1, fr2 bool // login allowed from 127.0.0.1, from 127.0.0.2
	}{
		{"AllowUsers " + U, true, true},
		{"AllowUsers nobody root", false, false},
		{"DenyUsers " + U, false, false},
		{"AllowUsers nobody " + U + "@127.0.0.1", true, false},
		{"AllowUsers " + U + "@10.0.0.0/8", false, false},
		{"AllowUsers " + U + "@127.0.0.0/8", true, true},
		{"DenyUsers *@127.0.0.2", true, false},
		{"AllowUsers " + U + "@localhost", false, false}, // UseDNS no: the address only
		{"AllowUsers " + U[:3] + "*", true, true},
		{"AllowUsers " + U + "\nDenyUsers " + U, false, false},
		{"AllowGroups " + G, true, true},
		{"AllowGroups nogroup root", false, false},
		{"DenyGroups " + G, false, false},
		{"AllowUsers " + U + "\nDenyGroups " + G, false, false},
		{"Match Address 127.0.0.2\n\tDenyUsers " + U, true, false},
		{"Match Address 127.0.0.2\n\tAllowGroups nogroup", true, false},
	} {
		for _, impl := range []string{"offload", "openssh"} {
			addr := startAllowDeny(t, impl, sshdBin, u.cl.authorizedKeys, tc.rules)
			for i, want := range []bool{tc.from1, tc.fr2} {
				from := fmt.Sprintf("127.0.0.%d", i+1)
				out, stderr, err := u.cl.run(t, addr, from, nil, nil, "echo", "in")
				if got := err == nil && out == "in\n"; got != want {
					t.Errorf("%s, %q, from %s: login %v, want %v (%q %v)", impl, tc.rules, from, got, want, stderr, err)
				}
			}
		}
	}
}

// startAllowDeny starts offload (in this process) or OpenSSH's sshd on
// 127.0.0.1 with rules and returns its address.
func startAllowDeny(t *testing.T, impl, sshdBin, authorizedKeys, rules string) string {
	t.Helper()
	dir := t.TempDir()
	config := func(addr string) string {
		return fmt.Sprintf("ListenAddress %s\nHostKey %s\nPidFile none\nUsePAM no\n%s\n", addr, writeHostKey(t, dir), rules)
	}
	if impl == "offload" { // in this process: the port is the one it bound
		d, _, _ := startTestDaemon(t, writeFileT(t, dir, "sshd_config", "CalibrationCache none\n"+config("127.0.0.1:0")))
		return d.listeners[0].Addr().String()
	}
	os.MkdirAll("/run/sshd", 0o755)
	s := testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		log := &lockedBuffer{}
		cmd := exec.Command(sshdBin, "-D", "-e", "-f", writeFileT(t, dir, "sshd_config", config("127.0.0.1:"+port)))
		cmd.Stdout, cmd.Stderr = log, log
		return testenv.Launch{Cmd: cmd, Output: log, Listens: func() bool { return strings.Contains(log.String(), "Server listening on") }}
	})
	return "127.0.0.1:" + s.Port
}
