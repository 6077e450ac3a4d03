package privsep

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// preauthConn connects from src and reads the server's version: a worker
// holds the connection, waiting for the client.
func (d *daemon) preauthConn(t *testing.T, src string) net.Conn {
	t.Helper()
	dl := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := dl.Dial("tcp", "127.0.0.1:"+d.port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	readLine(t, c)
	return c
}

// killWorkers kills every pre-auth worker as the OOM killer would.
func (d *daemon) killWorkers(t *testing.T) {
	t.Helper()
	workers := d.children("offload-sshd: pre-auth worker")
	if len(workers) == 0 {
		t.Fatal("no pre-auth worker")
	}
	for _, pid := range workers {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// refused reports whether a connection from src gets OpenSSH's penalty
// refusal instead of the server's version.
func (d *daemon) refused(t *testing.T, src string) bool {
	t.Helper()
	dl := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := dl.Dial("tcp", "127.0.0.1:"+d.port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 64)
	n, _ := io.ReadAtLeast(c, b, 8)
	return strings.Contains(string(b[:n]), "Not allowed at this time")
}

// TestKilledWorkersPenaliseNobody: 8 sources each hold a pre-auth
// connection when every pre-auth worker is killed; nothing shows any of
// them caused it, so none is penalised: all 8 log in afterwards.
func TestKilledWorkersPenaliseNobody(t *testing.T) {
	d := startDaemon(t, nil, "PreauthWorkers 2", "MaxStartups 100")
	a := newAccount(t)
	for i := 2; i <= 9; i++ {
		d.preauthConn(t, fmt.Sprintf("127.0.0.%d", i))
	}
	d.killWorkers(t)
	var wg sync.WaitGroup
	for i := 2; i <= 9; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, errs, code := d.ssh(a, "echo in", fmt.Sprintf("BindAddress=127.0.0.%d", i)); code != 0 || out != "in\n" {
				t.Errorf("127.0.0.%d after the kill: exit %d %q %s", i, code, out, errs)
			}
		}()
	}
	wg.Wait()
	if strings.Contains(d.log.String(), "penalty: caused crash") {
		t.Error("a source was penalised for the killed workers")
	}
}

// TestLoginWhileWorkersRestart: a login that starts 0.1 s after every
// pre-auth worker was killed waits for their replacements instead of
// being dropped.
func TestLoginWhileWorkersRestart(t *testing.T) {
	d := startDaemon(t, nil, "PreauthWorkers 2")
	a := newAccount(t)
	d.killWorkers(t)
	time.Sleep(100 * time.Millisecond)
	if out := d.mustSSH(a, "echo in"); out != "in\n" {
		t.Fatalf("%q", out)
	}
}

// TestCrashChargedToItsCause: with a worker built with the test crash
// hook, a client whose input crashes the worker is penalised ("caused
// crash"); the other clients the worker held are not, and log in.
func TestCrashChargedToItsCause(t *testing.T) {
	bin := testenv.OffloadBinaryTags(t, "offloadcrashhook")
	d := startDaemonBinary(t, bin, "PreauthWorkers 1", "MaxStartups 100")
	a := newAccount(t)
	for i := 2; i <= 4; i++ {
		d.preauthConn(t, fmt.Sprintf("127.0.0.%d", i))
	}
	u := *a.User
	u.Username = "offload-crash-hook" // the hook's user name (sshd/preauth/crashhook.go)
	crasher := &account{User: &u, key: a.key}
	d.ssh(crasher, "true", "BindAddress=127.0.0.5")
	waitFor(t, "the crash to be charged", func() bool { return strings.Contains(d.log.String(), "penalty: caused crash") })
	if !d.refused(t, "127.0.0.5") {
		t.Error("the source whose input crashed the worker is not penalised")
	}
	for i := 2; i <= 4; i++ {
		if out, errs, code := d.ssh(a, "echo in", fmt.Sprintf("BindAddress=127.0.0.%d", i)); code != 0 || out != "in\n" {
			t.Errorf("127.0.0.%d: exit %d %q %s", i, code, out, errs)
		}
	}
}

// TestPostauthCrashNoPenalty: a logged-in user who crashes her own
// post-auth process (kill -SEGV) puts no penalty on her address: OpenSSH
// penalises pre-auth outcomes only.
func TestPostauthCrashNoPenalty(t *testing.T) {
	d := startDaemon(t, nil, "PerSourcePenalties crash:90s min:1s")
	a := newAccount(t)
	for range 3 {
		// The session kills the process serving it: its parent.
		d.ssh(a, "kill -SEGV $PPID; sleep 5", "BindAddress=127.0.0.2")
	}
	waitFor(t, "the post-auth crashes", func() bool {
		return strings.Count(d.log.String(), "child process ended unexpectedly") >= 3
	})
	if d.refused(t, "127.0.0.2") {
		t.Fatal("the user's address is penalised for crashes of her own post-auth process")
	}
	if out := d.mustSSH(a, "echo in", "BindAddress=127.0.0.2"); out != "in\n" {
		t.Fatalf("%q", out)
	}
}
