package load

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/test/hostile/harness"
)

const (
	transferSize = 64 << 10
	goSlack      = 5
	heapSlack    = 32 << 20
	// dialers bounds concurrent handshakes from the test itself, so the
	// client side does not starve the server of CPU on two cores.
	dialers = 32
)

// sessionCount is 500, or 100 under -short unless OFFLOAD_LOAD=1.
func sessionCount() int {
	if testing.Short() && os.Getenv("OFFLOAD_LOAD") != "1" {
		return 100
	}
	return 500
}

// TestConcurrentSessions holds N logged-in connections open at once,
// each doing an exec and a transfer.
func TestConcurrentSessions(t *testing.T) {
	n := sessionCount()
	baseG := harness.Goroutines()
	baseHeap := harness.HeapInUse()
	srv := harness.Start(t, func(c *sshd.Config) {
		c.MaxStartups = -1 // this test is about sessions, not storms
		c.LoginGraceTime = time.Minute
	})
	start := time.Now()
	clients, errs := loginAll(srv, n)
	t.Logf("%d logins in %v, %d errors", n, time.Since(start).Round(time.Millisecond), countErrs(errs))
	peakG := harness.Goroutines()
	workErrs := workAll(clients)
	t.Logf("%d sessions worked concurrently in %v (goroutines at peak ~%d)", n, time.Since(start).Round(time.Millisecond), max(peakG, harness.Goroutines()))
	for _, c := range clients {
		if c != nil {
			c.Close()
		}
	}
	failures := 0
	for i := range n {
		for _, err := range []error{errs[i], workErrs[i]} {
			if err != nil {
				failures++
				if failures <= 10 {
					t.Errorf("session %d: %v", i, err)
				}
			}
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d sessions failed", failures, n)
	}
	checkBaseline(t, srv, baseG, baseHeap)
}

func countErrs(errs []error) int {
	c := 0
	for _, e := range errs {
		if e != nil {
			c++
		}
	}
	return c
}

// loginAll logs in n clients, at most dialers at a time.
func loginAll(srv *harness.Server, n int) ([]*ssh.Client, []error) {
	clients := make([]*ssh.Client, n)
	errs := make([]error, n)
	sem := make(chan struct{}, dialers)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			clients[i], errs[i] = srv.Dial()
		}()
	}
	wg.Wait()
	return clients, errs
}

// workAll runs one exec and one transfer on every client at once: all
// connections stay open until every one has finished.
func workAll(clients []*ssh.Client) []error {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = work(c, i)
		}()
	}
	wg.Wait()
	return errs
}

// work runs `echo` and a `cat` round trip on c.
func work(c *ssh.Client, i int) error {
	s, err := harness.NewSession(c)
	if err != nil {
		return fmt.Errorf("exec session: %w", err)
	}
	out, err := s.Output(fmt.Sprintf("echo session-%d", i))
	s.Close()
	if err != nil || string(out) != fmt.Sprintf("session-%d\n", i) {
		return fmt.Errorf("echo: %q, %v", out, err)
	}
	return transfer(c)
}

// transfer sends transferSize random bytes through cat and compares the
// SHA-256 of what comes back.
func transfer(c *ssh.Client) error {
	s, err := harness.NewSession(c)
	if err != nil {
		return fmt.Errorf("transfer session: %w", err)
	}
	defer s.Close()
	data := make([]byte, transferSize)
	rand.Read(data)
	s.Stdin = bytes.NewReader(data)
	out, err := s.Output("cat")
	if err != nil {
		return fmt.Errorf("cat: %w", err)
	}
	if sha256.Sum256(out) != sha256.Sum256(data) {
		return fmt.Errorf("transfer: got %d bytes back, checksum differs", len(out))
	}
	return nil
}

// checkBaseline checks goroutines and heap with the server still
// listening but every connection closed.
func checkBaseline(t *testing.T, srv *harness.Server, baseG int, baseHeap uint64) {
	t.Helper()
	n, ok := harness.SettleGoroutines(baseG+goSlack+serverGoroutines, 20*time.Second)
	if !ok {
		t.Errorf("goroutines: %d before the server, %d after (leak?)\n%s", baseG, n, harness.GoroutineDump())
	}
	heap := harness.HeapInUse()
	t.Logf("goroutines %d before, %d after; heap in use %s before, %s after", baseG, n, harness.MiB(baseHeap), harness.MiB(heap))
	if heap > baseHeap && heap-baseHeap > heapSlack {
		t.Errorf("heap in use grew from %s to %s", harness.MiB(baseHeap), harness.MiB(heap))
	}
}

// serverGoroutines is what a listening server with no connections runs
// (its accept loop).
const serverGoroutines = 1

// TestMaxStartups fills every MaxStartups slot with silent clients:
// further connections are dropped until LoginGraceTime ends the silent
// ones, then logins succeed again.
func TestMaxStartups(t *testing.T) {
	const slots = 4
	const grace = 2 * time.Second
	srv := harness.Start(t, func(c *sshd.Config) {
		c.MaxStartups = slots
		c.LoginGraceTime = grace
	})
	var silent []*silentConn
	for range slots {
		silent = append(silent, dialSilent(t, srv.Addr))
	}
	time.Sleep(100 * time.Millisecond) // let the server take the slots
	if c, err := srv.Dial(); err == nil {
		c.Close()
		t.Error("login succeeded with every MaxStartups slot taken")
	} else {
		t.Logf("with %d silent clients: %v", slots, err)
	}
	for _, s := range silent {
		if err := s.waitClosed(grace + 5*time.Second); err != nil {
			t.Errorf("silent client: %v", err)
		}
	}
	c, err := srv.Dial()
	if err != nil {
		t.Fatalf("login after LoginGraceTime freed the slots: %v", err)
	}
	c.Close()
}

// TestConnectionStorm opens many connections at once against a small
// MaxStartups while a healthy session transfers.
func TestConnectionStorm(t *testing.T) {
	baseG := harness.Goroutines()
	baseHeap := harness.HeapInUse()
	srv := harness.Start(t, func(c *sshd.Config) {
		c.MaxStartups = 8
		c.LoginGraceTime = 10 * time.Second
	})
	st, err := srv.StartStream()
	if err != nil {
		t.Fatal(err)
	}
	storm := 300
	if testing.Short() {
		storm = 150
	}
	var ok, dropped atomic.Int64
	var wg sync.WaitGroup
	for range storm {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := srv.ClientConfig()
			cfg.Timeout = 20 * time.Second
			c, err := ssh.Dial("tcp", srv.Addr, cfg)
			if err != nil {
				dropped.Add(1)
				return
			}
			ok.Add(1)
			c.Close()
		}()
	}
	wg.Wait()
	t.Logf("storm of %d connections against MaxStartups 8: %d logged in, %d dropped", storm, ok.Load(), dropped.Load())
	if dropped.Load() == 0 {
		t.Log("no connection was dropped: the storm never exceeded MaxStartups at once")
	}
	if err := st.WaitProgress(256<<10, 30*time.Second); err != nil {
		t.Errorf("healthy session after the storm: %v", err)
	}
	for i := range 5 {
		c, err := srv.Dial()
		if err != nil {
			t.Errorf("login %d after the storm: %v", i, err)
			continue
		}
		if err := transfer(c); err != nil {
			t.Errorf("transfer %d after the storm: %v", i, err)
		}
		c.Close()
	}
	n, err := st.Stop(30 * time.Second)
	if err != nil {
		t.Errorf("healthy session: %v", err)
	}
	t.Logf("healthy session moved %d bytes through the storm, sha256 equal", n)
	checkBaseline(t, srv, baseG, baseHeap)
}

// TestPreAuthMemory measures what an unauthenticated connection costs
// the server once it has sent its identification line, idle and after
// one maximum-size packet: MaxStartups times this is the memory a flood
// of silent clients can hold.
func TestPreAuthMemory(t *testing.T) {
	// A 200 KiB SSH_MSG_IGNORE in the clear, as allowed before KEXINIT.
	big := make([]byte, 200<<10)
	binary.BigEndian.PutUint32(big, uint32(len(big)-4))
	big[4] = 8 // padding; 200 KiB keeps the whole packet aligned on 8
	big[5] = 2 // SSH_MSG_IGNORE
	binary.BigEndian.PutUint32(big[6:], uint32(len(big)-4-1-8-5))
	for _, c := range []struct {
		name  string
		after []byte
	}{
		{"idle", nil},
		{"after-a-200KiB-packet", big},
	} {
		t.Run(c.name, func(t *testing.T) { preAuthMemory(t, c.after) })
	}
}

func preAuthMemory(t *testing.T, after []byte) {
	const n = 100
	srv := harness.Start(t, func(c *sshd.Config) {
		c.MaxStartups = -1
		c.LoginGraceTime = time.Minute
	})
	baseG := harness.Goroutines()
	base := harness.HeapInUse()
	var conns []*silentConn
	for range n {
		s := dialSilent(t, srv.Addr)
		if _, err := s.nc.Write(append([]byte("SSH-2.0-memory-probe\r\n"), after...)); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, s)
	}
	// Wait until the server has answered every one (its KEXINIT follows
	// the version line), then give it a moment to read what followed.
	for _, s := range conns {
		s.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := s.nc.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	held := harness.HeapInUse()
	for i, s := range conns {
		if !s.open() {
			t.Fatalf("the server closed connection %d: nothing to measure", i)
		}
	}
	per := (int64(held) - int64(base)) / n
	t.Logf("%d unauthenticated connections hold %s of heap: %d KiB each; with MaxStartups %d that bounds pre-auth memory at about %s",
		n, harness.MiB(held-min(held, base)), per>>10, sshd.DefaultMaxStartups, harness.MiB(uint64(max(per, 0))*sshd.DefaultMaxStartups))
	if per > 2<<20 {
		t.Errorf("an unauthenticated connection holds %d KiB", per>>10)
	}
	for _, s := range conns {
		s.nc.Close()
	}
	if g, ok := harness.SettleGoroutines(baseG+goSlack, 20*time.Second); !ok {
		t.Errorf("goroutines %d before, %d after closing the clients", baseG, g)
	}
}
