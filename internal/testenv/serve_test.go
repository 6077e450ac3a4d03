package testenv

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStartOnFreePortRetriesATakenPort: a server that ends because its
// port was taken is started again on another port; one that says it
// listens is returned, running.
func TestStartOnFreePortRetriesATakenPort(t *testing.T) {
	var ports []string
	s := StartOnFreePort(t, func(port string) Launch {
		ports = append(ports, port)
		out := &lockedBuffer{}
		script := "echo 'listen tcp 127.0.0.1:" + port + ": bind: address already in use' >&2; exit 255"
		if len(ports) == 2 {
			script = "echo listening; exec sleep 60"
		}
		cmd := exec.Command("sh", "-c", script)
		cmd.Stdout, cmd.Stderr = out, out
		return Launch{Cmd: cmd, Output: out, Listens: func() bool { return strings.Contains(out.String(), "listening\n") }}
	})
	if len(ports) != 2 || s.Port != ports[1] {
		t.Fatalf("tries on ports %v, served on %s; want the second try's", ports, s.Port)
	}
	if isClosed(s.Ended) {
		t.Fatal("the server that listens has ended")
	}
}
