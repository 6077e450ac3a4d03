package sshtest

import (
	"os/exec"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// SSHAgent runs OpenSSH's ssh-agent in the foreground on the Unix socket
// sock, with args added, until t ends, and returns its output. It returns
// once the agent accepts a connection: the socket's file appears at bind,
// before the agent listens, and a client connecting in between is refused.
func SSHAgent(t testing.TB, sock string, args ...string) *LogBuffer {
	t.Helper()
	bin := testenv.LookPath(t, "ssh-agent", "apt-get install openssh-client")
	out := &LogBuffer{}
	cmd := exec.Command(bin, append([]string{"-D", "-a", sock}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !testenv.WaitUntil(t, func() bool { return testenv.SocketListening(sock) }) {
		t.Fatalf("ssh-agent did not listen on %s before the deadline: %s", sock, out)
	}
	return out
}
