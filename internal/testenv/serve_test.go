package testenv_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
)

// TestStartOnFreePortRetriesATakenPort: a server that ends because its
// port was taken is started again on another port; one that says it
// listens is returned, running.
func TestStartOnFreePortRetriesATakenPort(t *testing.T) {
	var ports []string
	s := testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		ports = append(ports, port)
		out := &sshtest.LogBuffer{}
		script := "echo 'listen tcp 127.0.0.1:" + port + ": bind: address already in use' >&2; exit 255"
		if len(ports) == 2 {
			script = "echo listening; exec sleep 60"
		}
		cmd := exec.Command("sh", "-c", script)
		cmd.Stdout, cmd.Stderr = out, out
		return testenv.Launch{Cmd: cmd, Output: out, Listens: func() bool { return strings.Contains(out.String(), "listening\n") }}
	})
	if len(ports) != 2 || s.Port != ports[1] {
		t.Fatalf("tries on ports %v, served on %s; want the second try's", ports, s.Port)
	}
	select {
	case <-s.Ended:
		t.Fatal("the server that listens has ended")
	default:
	}
}
