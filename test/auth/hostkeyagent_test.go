package auth_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
)

// startAgent runs ssh-agent in the foreground on a socket in f.dir and
// loads the private keys given into it; it returns the socket.
func startAgent(t *testing.T, f *fixture, keys ...string) string {
	t.Helper()
	sock := filepath.Join(f.dir, "hostkey-agent.sock")
	sshtest.SSHAgent(t, sock)
	add := testenv.LookPath(t, "ssh-add", "apt-get install openssh-client")
	for _, k := range keys {
		c := exec.Command(add, "-q", k)
		c.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add %s: %v\n%s", k, err, out)
		}
	}
	return sock
}

// TestHostKeyAgentWithOpenSSH keeps host keys (Ed25519, ECDSA, RSA) in
// an ssh-agent only, their private files removed, and runs offload sshd
// with HostKeyAgent and HostKey lines naming the public files (or the
// removed private file, whose .pub is then read), privilege-separated and
// in-process. The OpenSSH client logs in checking the host key against a
// known_hosts file that lists only the agent's key, with the signature
// algorithm it insists on (rsa-sha2-512 and rsa-sha2-256 for the RSA
// key, which the agent must make as asked). HostKeyAgent SSH_AUTH_SOCK
// takes the socket from sshd's environment. The started line names the
// agent as the keys' provider.
func TestHostKeyAgentWithOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "hka-Secret-1") // a password: an account without one is locked
	types := map[string]string{"ed25519": "ssh-ed25519", "ecdsa": "ecdsa-sha2-nistp256", "rsa": "rsa-sha2-512"}
	var privs []string
	keys := map[string]string{}
	for typ := range types {
		k := f.keygen("agent_host_"+typ, typ)
		privs, keys[typ] = append(privs, k), k
	}
	sock := startAgent(t, f, privs...)
	for _, k := range privs {
		os.Remove(k) // the agent's copy is the only one
	}
	cases := []struct{ typ, alg, hostKey, agent string }{
		{"ed25519", "ssh-ed25519", keys["ed25519"] + ".pub", sock},
		{"ecdsa", "ecdsa-sha2-nistp256", keys["ecdsa"] + ".pub", sock},
		{"rsa", "rsa-sha2-512", keys["rsa"] + ".pub", sock},
		{"rsa", "rsa-sha2-256", keys["rsa"], "SSH_AUTH_SOCK"},
	}
	for _, mode := range []string{"PrivilegeSeparation yes", "PrivilegeSeparation no"} {
		for _, c := range cases {
			name := mode + "/" + c.alg + "/HostKey " + filepath.Base(c.hostKey) + "/HostKeyAgent " + filepath.Base(c.agent)
			d := startOffloadDaemon(t, f, nil, []string{"SSH_AUTH_SOCK=" + sock}, mode,
				"HostKeyAgent "+c.agent, "HostKey "+c.hostKey, "HostKeyAlgorithms "+c.alg)
			pub := strings.TrimSpace(f.read(filepath.Base(keys[c.typ]) + ".pub"))
			kh := f.write("known_hosts."+d.port, "[127.0.0.1]:"+d.port+" "+pub+"\n")
			out, err := hostKeyLogin(t, f, d.port, u, kh, c.alg)
			if err != nil {
				t.Errorf("%s: %v\n%s\noffload log:\n%s", name, err, out, d.stderr)
				continue
			}
			if !strings.Contains(out, "kex: host key algorithm: "+c.alg) {
				t.Errorf("%s: the client did not use %s:\n%s", name, c.alg, out)
			}
			if !strings.Contains(d.stderr.String(), filepath.Base(c.hostKey)+"@agent") {
				t.Errorf("%s: the started line does not name the agent as the key's provider:\n%s", name, d.stderr)
			}
		}
	}
}

// hostKeyLogin logs in by key, checking the host key strictly against
// known_hosts with only the signature algorithm alg; it returns the
// client's debug output.
func hostKeyLogin(t *testing.T, f *fixture, port string, u *accountUser, knownHosts, alg string) (string, error) {
	t.Helper()
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.ssh, "-F", "/dev/null", "-v", "-p", port, "-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile="+knownHosts, "-o", "GlobalKnownHostsFile=/dev/null", "-o", "HostKeyAlgorithms="+alg,
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", u.key, "-l", u.Username, "127.0.0.1", "true")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
