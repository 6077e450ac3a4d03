// Package preauth is the pre-auth worker of offload sshd's process model:
// an unprivileged, sandboxed process that serves many connections up to
// their authentication. For each connection the monitor sends it, it runs
// the version exchange, the key exchange, the packet layer and the
// conversation of user authentication. It holds no host key and decides
// nothing: it asks the monitor to sign exchange hashes (remote.Signer) and to
// decide each authentication request (an auth.Authority that calls the
// monitor). Once the monitor has granted a login, the worker exports the
// connection's transport state and hands it back, and forgets it.
//
// # Sandbox
//
// After reading its configuration the worker enters sandbox.EnterPreauth:
// from then on it cannot open a file, create a socket, execute a program
// or start a process. A crash ends only the connections it holds.
package preauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/offload/offload/internal/rawio"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/remote"
	"github.com/offload/offload/sshd/sandbox"
	"github.com/offload/offload/sshd/transport"
)

// Main runs a pre-auth worker on the monitor's socket (inherited, see
// ipc.OpenChild) until the monitor goes away, and returns the exit code.
func Main() int {
	// One worker per CPU, each on one: the parallelism is across workers,
	// and a runtime per process spinning for work on every CPU would cost
	// the others theirs.
	runtime.GOMAXPROCS(1)
	// A worker's heap is small and short-lived (a key exchange's buffers
	// per connection, at most MaxStartups of them), so the runtime's 4 MiB
	// minimum heap goal made it collect every few logins; a goal of five
	// times the live heap (16 MiB at least) collects a quarter as often.
	debug.SetGCPercent(400)
	child, err := ipc.OpenChild()
	if err == nil {
		err = sandbox.CloseOnExec() // what it inherited reaches no program it starts
	}
	if err == nil || errors.Is(err, sandbox.ErrUnsupported) {
		err = remote.Become(child.Config) // unprivileged before any client byte
	}
	if err != nil && !errors.Is(err, sandbox.ErrUnsupported) {
		fmt.Fprintln(os.Stderr, "offload sshd pre-auth:", err)
		return 1
	}
	w, err := newWorker(child)
	if err != nil {
		w.log.Error("pre-auth worker: cannot start", "err", err)
		return 1
	}
	<-child.Peer.Done()
	w.closeAll()
	return 0
}

// worker is the state of one pre-auth process.
type worker struct {
	peer *ipc.Peer
	cfg  *ipc.ChildConfig
	plan *plan.Plan
	tr   *transport.Server
	log  *slog.Logger

	mu       sync.Mutex
	conns    map[uint64]net.Conn
	reporter *remote.Reporter // nil without metrics
	busy     *ipc.BusyTable   // shared with the monitor; nil: none
}

func newWorker(child *ipc.Child) (*worker, error) {
	cfg := child.Config
	log := slog.New(ipc.NewLogHandler(child.Peer, cfg.LogLevel))
	w := &worker{peer: child.Peer, cfg: cfg, log: log, conns: map[uint64]net.Conn{}}
	var err error
	if w.busy, err = openBusyTable(); err != nil { // before the sandbox
		return w, err
	}
	metrics, reporter := remote.Metrics(child)
	w.reporter = reporter
	if w.plan, err = plan.Parse(cfg.Plan); err != nil {
		return w, err
	}
	tc, _, err := w.plan.Build(plan.Preauth, child.Peer, log, metrics)
	if err != nil {
		return w, err
	}
	if w.tr, err = transport.NewServer(tc); err != nil {
		return w, err
	}
	rep, err := sandbox.EnterPreauth()
	if err != nil {
		return w, err
	}
	if len(rep.Missing) > 0 {
		log.Warn("pre-auth worker: sandbox incomplete", "sandbox", rep.String())
	} else {
		log.Debug("pre-auth worker: sandboxed", "sandbox", rep.String())
	}
	return w, child.Serve(w.handle)
}

// handle takes the monitor's messages: new connections and closings.
func (w *worker) handle(m *ipc.Message) {
	switch m.Type {
	case ipc.TypeNewConn:
		w.newConn(m)
	case ipc.TypeCloseConn:
		if cc, err := ipc.ParseCloseConn(m.Payload); err == nil {
			w.closeConn(cc.ConnID)
		}
		closeFiles(m.Files)
	default:
		closeFiles(m.Files)
		w.log.Warn("pre-auth worker: unexpected message from the monitor", "type", m.Type.String())
	}
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

func (w *worker) newConn(m *ipc.Message) {
	nc, err := ipc.ParseNewConn(m.Payload)
	if err != nil || len(m.Files) != 1 {
		closeFiles(m.Files)
		w.log.Error("pre-auth worker: bad new-conn message", "err", err, "files", len(m.Files))
		return
	}
	f := m.Files[0] // kept to read the socket's byte counts at the end
	c, err := rawio.FileConn(f)
	if err != nil {
		w.done(nc.ConnID, f, ipc.OutcomeClosed, err)
		f.Close()
		return
	}
	slot := w.busy.Slot(nc.ConnID)
	c = &markedConn{Conn: rawio.WrapConn(c), slot: slot}
	w.mu.Lock()
	w.conns[nc.ConnID] = c
	w.mu.Unlock()
	go w.serve(nc.ConnID, c, f, slot)
}

func (w *worker) closeConn(id uint64) {
	w.mu.Lock()
	c := w.conns[id]
	w.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

func (w *worker) closeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		c.Close()
	}
}

// serve runs one connection up to its hand-over; a panic ends only it.
func (w *worker) serve(id uint64, nc net.Conn, f *os.File, slot *ipc.BusySlot) {
	defer f.Close()
	defer slot.Release()
	log := w.log.With("conn", id, "remote", nc.RemoteAddr().String())
	defer func() {
		if r := recover(); r != nil {
			log.Error("pre-auth worker: panic serving connection", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			w.done(id, f, ipc.OutcomeProtocol, fmt.Errorf("panic: %v", r))
			nc.Close()
		}
		w.mu.Lock()
		delete(w.conns, id)
		w.mu.Unlock()
	}()
	out, err := w.run(id, nc, log, slot)
	if out != ipc.OutcomeHandedOver {
		w.done(id, f, out, err)
		nc.Close()
	}
}

// run authenticates the connection and hands it over; it returns how the
// connection ended here.
func (w *worker) run(id uint64, nc net.Conn, log *slog.Logger, slot *ipc.BusySlot) (ipc.Outcome, error) {
	if g := w.cfg.LoginGraceTime; g > 0 {
		nc.SetDeadline(time.Now().Add(g))
	}
	signer := &remote.Signer{Peer: w.peer, ConnID: id, Provenance: w.plan.HostKeyProvenance, Busy: slot}
	tc, err := w.tr.HandshakeWith(nc, &transport.ConnOptions{Signer: signer, Logger: log, ID: id})
	if err != nil {
		return outcomeOf(err, ipc.OutcomeNoAuth), err
	}
	a := &authority{peer: w.peer, id: id, busy: slot}
	opts := &auth.ServeOptions{MaxRequests: w.cfg.MaxRequests, Logger: log, Remote: nc.RemoteAddr()}
	if _, err := auth.Serve(context.Background(), tc, a, opts); err != nil {
		tc.Close()
		if a.failed {
			return outcomeOf(err, ipc.OutcomeAuthFail), err
		}
		return outcomeOf(err, ipc.OutcomeNoAuth), err
	}
	nc.SetDeadline(time.Time{})
	slot.Idle() // the rest is the monitor's
	return w.handOver(id, tc)
}

// handOver exports the authenticated connection to the monitor.
func (w *worker) handOver(id uint64, tc *transport.Conn) (ipc.Outcome, error) {
	st, err := tc.Export()
	if err != nil {
		tc.Close()
		return ipc.OutcomeClosed, err
	}
	b, err := st.MarshalBinary()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), ipc.SignTimeout)
		_, err = w.peer.Call(ctx, ipc.TypeHandoff, (&ipc.HandoffRequest{ConnID: id, State: b}).Marshal())
		cancel()
	}
	if err != nil {
		return ipc.OutcomeClosed, fmt.Errorf("pre-auth worker: hand-over: %w", err)
	}
	return ipc.OutcomeHandedOver, nil
}

// outcomeOf classifies err: a deadline is LoginGraceTime, a protocol
// error the client's fault; otherwise def.
func outcomeOf(err error, def ipc.Outcome) ipc.Outcome {
	var ne net.Error
	var de *transport.DisconnectError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return ipc.OutcomeGrace
	case errors.As(err, &de) && !de.FromPeer && de.Reason != 0 && de.Reason != connectionLost:
		return ipc.OutcomeProtocol
	}
	return def
}

const connectionLost = 10 // SSH_DISCONNECT_CONNECTION_LOST

// done tells the monitor a connection ended here, with the bytes its
// socket carried.
// The worker's provider counts go to the monitor every MetricsInterval,
// not per connection: a worker serves hundreds of handshakes a second.
func (w *worker) done(id uint64, sock *os.File, out ipc.Outcome, err error) {
	w.peer.Notify(ipc.TypeConnDone, ipc.NewConnDone(id, sock, out, err).Marshal())
}
