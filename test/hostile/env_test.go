package hostile

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/test/hostile/harness"
	"github.com/offload/offload/test/hostile/rawclient"
)

// Bounds the cases assert. They bound behaviour (the server must end
// the conversation, memory must not grow with the attack), not speed.
const (
	graceTime    = 2 * time.Second  // LoginGraceTime of the hostile server
	replyTimeout = 15 * time.Second // how long a case waits for the server's verdict
	heapBudget   = 64 << 20         // heap growth allowed while a case runs
	heapResidue  = 16 << 20         // heap growth allowed after it
	goSlack      = 3                // goroutines allowed above the case's baseline
	settleTime   = 10 * time.Second // how long goroutines may take to wind down
	progress     = 128 << 10        // bytes the healthy session must move after a case
)

// env is a server with a healthy session running through every case.
type env struct {
	t      *testing.T
	srv    *harness.Server
	stream *harness.Stream   // nil when the server has no connection layer
	open   []*rawclient.Conn // raw clients of the running case
}

// newEnv starts the server (LoginGraceTime graceTime) and the healthy
// session, and checks at the end that the session's data is intact.
func newEnv(t *testing.T, mutate func(*sshd.Config)) *env {
	t.Helper()
	srv := harness.Start(t, func(c *sshd.Config) {
		c.LoginGraceTime = graceTime
		if mutate != nil {
			mutate(c)
		}
	})
	e := &env{t: t, srv: srv}
	if err := probeSession(srv); noConnectionLayer(err) {
		t.Logf("NOTE: the server has no connection layer yet (%v); cases run without the healthy session", err)
		return e
	}
	st, err := srv.StartStream()
	if err != nil {
		t.Fatalf("healthy session: %v", err)
	}
	e.stream = st
	t.Cleanup(e.stopStream)
	// Let the session reach its steady state (buffers grown, goroutines
	// started) before the first baseline.
	if err := st.WaitProgress(4*progress, replyTimeout); err != nil {
		t.Fatal(err)
	}
	return e
}

// probeSession logs in with the raw client and opens a session channel.
func probeSession(srv *harness.Server) error {
	rc, err := rawclient.Dial(srv.Addr)
	if err != nil {
		return err
	}
	defer rc.Close()
	rc.SetDeadline(time.Now().Add(replyTimeout))
	if err := rc.Handshake(nil); err != nil {
		return err
	}
	if err := rc.AuthPublicKey(srv.User, srv.Signer); err != nil {
		return err
	}
	_, err = rc.OpenSession(0, 1<<20)
	return err
}

// noConnectionLayer recognises a server without the connection layer, which refuses
// every login with SERVICE_NOT_AVAILABLE.
func noConnectionLayer(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection layer not available") ||
		strings.Contains(err.Error(), "reason 7"))
}

func (e *env) stopStream() {
	n, err := e.stream.Stop(30 * time.Second)
	if err != nil {
		e.t.Errorf("healthy session: %v", err)
		return
	}
	e.t.Logf("healthy session: %d bytes echoed through cat, sha256 equal", n)
}

// needConnection skips cases that need the connection layer.
func (e *env) needConnection(t *testing.T) {
	t.Helper()
	if e.stream == nil {
		t.Skip("needs the connection layer")
	}
}

// run runs one hostile case as a subtest and checks heap, goroutines and
// the healthy session around it.
func (e *env) run(name string, fn func(t *testing.T)) {
	e.t.Run(name, func(t *testing.T) {
		baseG := harness.Goroutines()
		baseHeap := harness.HeapInUse()
		panics := e.srv.Log.Panics()
		sampler := harness.SampleHeap(10 * time.Millisecond)
		fn(t)
		e.closeClients()
		peak := sampler.Stop()
		if n := e.srv.Log.Panics() - panics; n > 0 {
			t.Errorf("the server recovered %d panic(s) during the case; log:\n%s", n, e.srv.Log.String())
		}
		if peak > baseHeap && peak-baseHeap > heapBudget {
			t.Errorf("heap grew by %s during the case (budget %s)", harness.MiB(peak-baseHeap), harness.MiB(heapBudget))
		}
		if e.stream != nil {
			if err := e.stream.WaitProgress(progress, replyTimeout); err != nil {
				t.Errorf("after the case: %v", err)
			}
		}
		n, ok := harness.SettleGoroutines(baseG+goSlack, settleTime)
		if !ok {
			t.Errorf("goroutines: %d before, %d after %v (leak)\n%s", baseG, n, settleTime, harness.GoroutineDump())
		}
		after := harness.HeapInUse()
		if after > baseHeap && after-baseHeap > heapResidue {
			t.Errorf("heap in use %s before, %s after", harness.MiB(baseHeap), harness.MiB(after))
		}
		t.Logf("goroutines %d -> %d; heap %s -> peak %s -> %s", baseG, n, harness.MiB(baseHeap), harness.MiB(peak), harness.MiB(after))
	})
}

// dial connects a raw client that the test closes.
func (e *env) dial(t *testing.T) *rawclient.Conn {
	t.Helper()
	rc, err := rawclient.Dial(e.srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	rc.SetDeadline(time.Now().Add(2 * replyTimeout))
	e.open = append(e.open, rc)
	return rc
}

// closeClients closes the raw clients of the case that just ended, so
// that the goroutine count after it does not include their connections.
func (e *env) closeClients() {
	for _, rc := range e.open {
		rc.Close()
	}
	e.open = nil
}

// versioned dials and exchanges identification lines.
func (e *env) versioned(t *testing.T) *rawclient.Conn {
	t.Helper()
	rc := e.dial(t)
	if err := rc.ExchangeVersions(rawclient.DefaultVersion); err != nil {
		t.Fatal(err)
	}
	return rc
}

// keyed dials and completes the first key exchange.
func (e *env) keyed(t *testing.T, o *rawclient.KexOptions) *rawclient.Conn {
	t.Helper()
	rc := e.dial(t)
	if err := rc.Handshake(o); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return rc
}

// loggedIn dials, exchanges keys and authenticates; it skips the test
// when the server has no connection layer.
func (e *env) loggedIn(t *testing.T) *rawclient.Conn {
	t.Helper()
	e.needConnection(t)
	rc := e.keyed(t, nil)
	if err := rc.AuthPublicKey(e.srv.User, e.srv.Signer); err != nil {
		t.Fatalf("login: %v", err)
	}
	return rc
}

// expectDisconnect asserts that the server sends DISCONNECT with reason
// and then closes the connection.
// (or one of also).
func expectDisconnect(t *testing.T, rc *rawclient.Conn, reason uint32, also ...uint32) {
	t.Helper()
	d, err := rc.ReadDisconnect(replyTimeout)
	if d == nil {
		t.Errorf("no SSH_MSG_DISCONNECT (want reason %d); connection ended with: %v", reason, err)
		return
	}
	if d.Reason != reason && !slices.Contains(also, d.Reason) {
		t.Errorf("DISCONNECT reason %d (%q), want %d %v", d.Reason, d.Message, reason, also)
	} else {
		t.Logf("server: DISCONNECT %d %q", d.Reason, d.Message)
	}
	if err := rc.WaitClosed(replyTimeout); err != nil {
		t.Errorf("server did not close the connection after DISCONNECT: %v", err)
	}
}

// expectClosed asserts that the server closes the connection within
// within, with or without a DISCONNECT, and returns how long it took.
func expectClosed(t *testing.T, rc *rawclient.Conn, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if rc.ServerVersion == "" {
		// Before the version exchange there are no packets to parse.
		if err := rc.WaitClosed(within); err != nil {
			t.Errorf("server kept the connection open for %v: %v", within, err)
		}
		return time.Since(start)
	}
	d, err := rc.ReadDisconnect(within)
	if d != nil {
		t.Logf("server: DISCONNECT %d %q", d.Reason, d.Message)
		err = rc.WaitClosed(within)
	}
	took := time.Since(start)
	if d == nil && isTimeout(err) || d != nil && err != nil {
		t.Errorf("server kept the connection open for %v: %v", within, err)
	}
	return took
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// writeAll writes chunks until done or the server stops reading; the
// error is expected once the server has closed the connection.
func writeAll(rc *rawclient.Conn, chunks ...[]byte) error {
	for _, c := range chunks {
		if err := rc.WriteRaw(c); err != nil {
			return err
		}
	}
	return nil
}
