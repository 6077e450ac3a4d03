package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Launch is one try at starting a server on a port: the process, not yet
// started, its output, and how the process itself says it listens.
type Launch struct {
	Cmd    *exec.Cmd
	Output fmt.Stringer
	// Listens reports whether the process has said it listens: a line of
	// its own log, or a PidFile of this try alone. A probe of the port is
	// no proof: between FreePort and the server's bind, another process
	// (another test binary) may take the port and answer the probe.
	Listens func() bool
}

// Served is a server StartOnFreePort started.
type Served struct {
	Port  string
	Cmd   *exec.Cmd
	Ended <-chan struct{} // closed when the process has ended
}

// StartOnFreePort starts a server on a free port of 127.0.0.1, with the
// Launch that try(port) describes, and waits until it listens. A server
// that ends because its port was taken in the meantime ("address already
// in use" in its output) is started again on another port, three tries in
// all. The server is interrupted at the end of the test (killed 15 s
// later if it still runs).
func StartOnFreePort(t testing.TB, try func(port string) Launch) *Served {
	t.Helper()
	var last string
	for range 3 {
		port := FreePort(t)
		l := try(port)
		s := start(t, port, l)
		listens := WaitUntil(t, func() bool { return l.Listens() || isClosed(s.Ended) })
		if listens && !isClosed(s.Ended) {
			return s
		}
		last = l.Output.String()
		if !isClosed(s.Ended) || !strings.Contains(strings.ToLower(last), "address already in use") {
			t.Fatalf("%s did not listen on port %s:\n%s", l.Cmd.Path, port, last)
		}
	}
	t.Fatalf("the server's port was taken three times in a row:\n%s", last)
	return nil
}

func start(t testing.TB, port string, l Launch) *Served {
	t.Helper()
	if err := l.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { l.Cmd.Wait(); close(ended) }()
	t.Cleanup(func() {
		l.Cmd.Process.Signal(os.Interrupt)
		select {
		case <-ended:
		case <-time.After(15 * time.Second):
			l.Cmd.Process.Kill()
			<-ended
		}
	})
	return &Served{Port: port, Cmd: l.Cmd, Ended: ended}
}

// FileExists reports whether path exists.
func FileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
