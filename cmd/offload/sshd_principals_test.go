package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// TestPrincipalsCommandLikeOpenSSH ports OpenSSH's principals-command
// regress test, side by side with OpenSSH's sshd: a user certificate
// signed by TrustedUserCAKeys logs in when AuthorizedPrincipalsCommand
// prints one of its principals and not otherwise, and the command gets
// the same %u %i %s %T %t %F %f arguments under both servers.
func TestPrincipalsCommandLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	sshdBin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	keygen := testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	cl := newOpenSSHClient(t)
	dir := filepath.Join("/run", testenv.UniqueName("ofpc")) // root's, not /tmp: the safe-path check
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ca := filepath.Join(t.TempDir(), "ca")
	for _, args := range [][]string{{"-q", "-t", "ed25519", "-N", "", "-f", ca},
		{"-q", "-s", ca, "-I", "key-id-7", "-z", "42", "-n", "p-one,p-two", cl.key + ".pub"}} {
		if args[1] == "-s" {
			pub, _ := os.ReadFile(cl.authorizedKeys)
			os.WriteFile(cl.key+".pub", pub, 0o644)
		}
		if out, err := exec.Command(keygen, args...).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen %v: %v\n%s", args, err, out)
		}
	}
	args := filepath.Join(dir, "args")
	answer := filepath.Join(dir, "answer")
	cmd := writeFileT(t, dir, "principals", "#!/bin/sh\necho \"$@\" > "+args+"\ncat "+answer+"\n")
	os.Chmod(cmd, 0o755)
	rules := fmt.Sprintf("AuthorizedKeysFile none\nTrustedUserCAKeys %s.pub\nAuthorizedPrincipalsCommand %s %%u %%i %%s %%T %%t %%F %%f\n"+
		"AuthorizedPrincipalsCommandUser nobody\n", ca, cmd)
	for _, tc := range []struct {
		answer string
		ok     bool
	}{{"p-two\n", true}, {"p-three\nnot-p-one\n", false}, {"", false}} {
		writeFileT(t, dir, "answer", tc.answer)
		var seen []string
		for _, impl := range []string{"offload", "openssh"} {
			os.WriteFile(args, nil, 0o666)
			os.Chmod(args, 0o666)
			addr := startAllowDeny(t, impl, sshdBin, cl.authorizedKeys, rules)
			out, stderr, err := cl.run(t, addr, "", nil, nil, "echo", "in")
			if got := err == nil && out == "in\n"; got != tc.ok {
				t.Errorf("%s, command answering %q: login %v, want %v (%q %v)", impl, tc.answer, got, tc.ok, stderr, err)
			}
			a, _ := os.ReadFile(args)
			seen = append(seen, strings.TrimSpace(string(a)))
		}
		if seen[0] != seen[1] || !strings.Contains(seen[0], "key-id-7 42 ssh-ed25519 ssh-ed25519-cert-v01@openssh.com SHA256:") {
			t.Errorf("command arguments: offload %q, sshd %q", seen[0], seen[1])
		}
	}
}
