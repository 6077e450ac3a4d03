package interop_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offload/offload/internal/proctree"
	"github.com/offload/offload/internal/testenv"
)

// An op ends when its client exits. A client that hangs is stopped when
// it has made no progress for -op-stall, not after a fixed time: beside
// a busy machine (load 9, the client at nice 19) an rsync with a
// re-exchange every 256 KiB took over a minute for 2 MiB and was killed
// while it worked. Progress is what the op's processes do (CPU time,
// bytes through read and write, counted by the kernel) and the bytes an
// in-process client moves; a client waiting for an answer that never
// comes does neither.
var opStall = flag.Duration("op-stall", 2*time.Minute, "stop an op's client when it has made no progress for this long")

// progress follows an op's work: its running commands and the bytes its
// in-process client moved.
type progress struct {
	mu    sync.Mutex
	pids  map[int]bool
	moved atomic.Int64 // bytes of in-process clients, commands ended
}

func (p *progress) started(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pids == nil {
		p.pids = map[int]bool{}
	}
	p.pids[pid] = true
}

func (p *progress) ended(pid int) {
	p.mu.Lock()
	delete(p.pids, pid)
	p.mu.Unlock()
	p.moved.Add(1)
}

// value grows while the op works.
func (p *progress) value() int64 {
	p.mu.Lock()
	roots := make([]int, 0, len(p.pids))
	for pid := range p.pids {
		roots = append(roots, pid)
	}
	p.mu.Unlock()
	v := p.moved.Load()
	t, _ := proctree.Read("/proc")
	for _, pid := range append(roots, t.Descendants(roots...)...) {
		v += int64(t[pid].UTime+t[pid].STime) + ioChars(pid)
	}
	return v
}

// ioChars is the bytes a process passed to read and write (rchar and
// wchar of /proc/PID/io).
func ioChars(pid int) int64 {
	var v int64
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, val, ok := bytes.Cut(line, []byte(": "))
		if ok && (string(k) == "rchar" || string(k) == "wchar") {
			n, _ := strconv.ParseInt(string(val), 10, 64)
			v += n
		}
	}
	return v
}

// clientTimeout (seconds) is what the harness gives clients for their own
// connect, handshake and idle limits: more than -op-stall, so that a
// slow handshake on a loaded machine (node-ssh2's 20 s ran out in a DH
// group exchange at load 13) is the watchdog's to judge.
const clientTimeout = 3600

// errStalled is why an op's context ended.
type errStalled struct{ idle time.Duration }

func (e errStalled) Error() string {
	return fmt.Sprintf("stopped: no progress for %v (-op-stall)", e.idle)
}

// opContext is the context of one op: cancelled, with errStalled as its
// cause, when p has not grown for -op-stall, or at the test's startup
// deadline (shortly before the test binary's -timeout).
func opContext(t *testing.T, p *progress) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(context.Background(), testenv.StartupDeadline(t))
	ctx, cancelCause := context.WithCancelCause(ctx)
	go watch(ctx, p, cancelCause)
	return ctx, func() { cancelCause(nil); cancel() }
}

func watch(ctx context.Context, p *progress, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, since := p.value(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if v := p.value(); v != last {
				last, since = v, now
			} else if idle := now.Sub(since); idle >= *opStall {
				cancel(errStalled{idle: idle.Round(time.Second)})
				return
			}
		}
	}
}

// withCause adds why ctx ended to err.
func withCause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); err != nil && c != nil && c != context.Canceled {
		return fmt.Errorf("%w (%v)", err, c)
	}
	return err
}

// countedConn counts the bytes an in-process client moves.
type countedConn struct {
	net.Conn
	p *progress
}

func (c countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.p.moved.Add(int64(n))
	return n, err
}

func (c countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.p.moved.Add(int64(n))
	return n, err
}

// TestWatchdogStopsStalledOp: a client that waits without end (sleep
// stands in) is stopped once it has made no progress for -op-stall, with
// its children, and the error says why.
func TestWatchdogStopsStalledOp(t *testing.T) {
	saved := *opStall
	defer func() { *opStall = saved }()
	*opStall = 2 * time.Second
	a := &attempt{local: t.TempDir(), tools: map[string]string{"sh": "/bin/sh"}}
	ctx, cancel := opContext(t, &a.prog)
	defer cancel()
	_, err := a.cmd(ctx, nil, "", "sh", "-c", "sleep 600 & wait")
	if err == nil || !strings.Contains(err.Error(), "no progress for") {
		t.Fatalf("a client that sleeps: %v, want stopped for no progress", err)
	}
	if len(a.prog.pids) != 0 {
		t.Errorf("commands still followed after the op: %v", a.prog.pids)
	}
}
