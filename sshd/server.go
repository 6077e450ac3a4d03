package sshd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/inproc"
	"github.com/offload/offload/sshd/monitor"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/sandbox"
	"github.com/offload/offload/sshd/transport"
	"github.com/offload/offload/sshd/wire"
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("sshd: server closed")

// Server is an SSH server. Create it with NewServer.
type Server struct {
	cfg  *settings
	tr   *transport.Server
	mon  *monitor.Monitor // nil in the in-process mode
	plan *plan.Plan       // what the children construct from; nil in the in-process mode
	log  *slog.Logger

	ctx    context.Context // cancelled to end every connection
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*inproc.Conn]struct{}
	env       *inproc.Env // what the in-process connections share
	closing   bool
	wg        sync.WaitGroup // admitted connections, from Serve or ServeConn

	startups atomic.Int64 // connections not yet authenticated
	nextID   atomic.Uint64
	failed   atomic.Int64 // in-process connections that ended before a login
}

// FailedBeforeLogin counts the connections served in this process whose
// key exchange or authentication failed (inetd mode exits 255 after one,
// as sshd -i does).
func (s *Server) FailedBeforeLogin() int64 { return s.failed.Load() }

// NewServer checks cfg and prepares the host keys and algorithm lists.
func NewServer(cfg *Config) (*Server, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	sandbox.HangupDefault() // the sessions of a server started under nohup end on a hangup
	st, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	if err := st.Auth.Validate(); err != nil {
		return nil, fmt.Errorf("sshd: %w", err)
	}
	pl, tr, err := newTransport(st)
	if err != nil {
		return nil, err
	}
	kex, hostKeys, ciphers, macs := tr.Offer()
	st.log.Info("sshd: algorithms offered", "kex", kex, "host_keys", hostKeys, "ciphers", ciphers, "macs", macs)
	s := &Server{cfg: st, tr: tr, log: st.log, listeners: map[net.Listener]struct{}{}, conns: map[*inproc.Conn]struct{}{}}
	s.env = s.inprocEnv(st)
	if st.Separation != nil {
		if s.mon, err = s.newMonitor(st, pl); err != nil {
			return nil, err
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// newTransport builds this process's transport server from the
// configured plan, with the server's registry and host keys, and returns
// the plan it resolved.
func newTransport(st *settings) (*plan.Plan, *transport.Server, error) {
	pl, err := st.configuredPlan()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := pl.TransportConfig(st.Registry, st.HostKeys, st.log)
	if err != nil {
		return nil, nil, fmt.Errorf("sshd: %w", err)
	}
	tr, err := transport.NewServer(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("sshd: %w", err)
	}
	resolvePlan(pl, tr)
	return pl, tr, nil
}

// Transport returns the transport server, for its algorithm offer.
func (s *Server) Transport() *transport.Server { return s.tr }

// Plan returns the plan a separated server's children construct from
// (without the host public keys, which the monitor adds); nil for a
// server that runs in one process.
func (s *Server) Plan() *plan.Plan { return s.plan }

// Serve accepts connections on l until Shutdown, serving each in its own
// goroutine. It returns ErrServerClosed after Shutdown, or the error that
// closed the listener.
func (s *Server) Serve(l net.Listener) error {
	if !s.track(l) {
		l.Close()
		return ErrServerClosed
	}
	defer s.untrack(l)
	err := AcceptLoop(l, func(nc net.Conn) { go s.ServeConn(nc) }, s.log)
	if s.isClosing() {
		return ErrServerClosed
	}
	return err
}

// AcceptLoop accepts connections on l and passes each to serve, until l
// is closed; it returns the error that closed it (wrapping
// net.ErrClosed). Every other accept error — out of descriptors (EMFILE,
// ENFILE), out of memory, a connection reset before accept — is logged
// and retried after a pause that doubles up to a second, so that a
// server out of descriptors recovers once they are freed instead of
// stopping. It is the accept loop of Serve and of offload sshd.
func AcceptLoop(l net.Listener, serve func(net.Conn), log *slog.Logger) error {
	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("sshd: accept: %w", err)
			}
			delay = backoff(delay)
			log.Warn("sshd: accept failed; retrying", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		serve(nc)
	}
}

func backoff(d time.Duration) time.Duration {
	if d == 0 {
		return 5 * time.Millisecond
	}
	return min(2*d, time.Second)
}

func (s *Server) track(l net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.listeners[l] = struct{}{}
	return true
}

func (s *Server) untrack(l net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.listeners, l)
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Shutdown stops accepting, waits for connections to end until ctx is
// done, then disconnects the remaining ones and waits for them to finish.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for l := range s.listeners {
		l.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	if s.mon != nil {
		err := s.mon.Shutdown(ctx)
		s.cancel()
		<-done
		return err
	}
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
	}
	s.disconnectAll()
	s.cancel()
	<-done
	return ctx.Err()
}

func (s *Server) disconnectAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Disconnect(wire.DisconnectByApplication, "server shutting down")
	}
}

// admit counts c as a connection of the server; false once shutting down.
func (s *Server) admit(c *inproc.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1) // under mu: Shutdown sets closing under mu before it waits
	return true
}

// admitSeparated counts a connection of a separated server.
func (s *Server) admitSeparated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Server) forget(c *inproc.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	s.wg.Done()
}

// ServeConn serves one connection and returns when it has ended. It
// closes nc. It is what Serve runs for each accepted connection, and what
// an inetd-style caller runs on its one connection.
func (s *Server) ServeConn(nc net.Conn) {
	if s.mon != nil && separable(nc) {
		if !s.admitSeparated() {
			nc.Close()
			return
		}
		defer s.wg.Done()
		s.serveSeparated(nc)
		return
	}
	c := inproc.New(s.env, nc, s.nextID.Add(1))
	if !s.admit(c) {
		nc.Close()
		return
	}
	defer s.forget(c)
	c.Serve(s.ctx)
}

// inprocEnv is what the server's in-process connections share.
func (s *Server) inprocEnv(st *settings) *inproc.Env {
	return &inproc.Env{Transport: s.tr, Logins: st.logins, Log: s.log,
		MaxAuthRequests: auth.MaxRequests(st.Auth), LoginGraceTime: st.LoginGraceTime, Penalties: st.Penalties,
		Admit:    s.admitConn,
		OnFailed: func() { s.failed.Add(1) }, PAMKeeper: childRunner.Load()}
}

// startup takes a MaxStartups slot; release gives it back.
func (s *Server) startup() (release func(), ok bool) {
	n := s.startups.Add(1)
	full := s.cfg.MaxStartups > 0 && n > int64(s.cfg.MaxStartups)
	if full || (s.cfg.DropStartup != nil && s.cfg.DropStartup(int(n-1))) {
		s.startups.Add(-1)
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { s.startups.Add(-1) }) }, true
}

// admitConn takes the slots a connection holds until it authenticates,
// in both process modes: its source's (Config.Penalties) and a
// MaxStartups slot. A refusal is logged on log; release gives both back.
func (s *Server) admitConn(nc net.Conn, log *slog.Logger) (release func(), ok bool) {
	slot, ok := s.cfg.Penalties.AdmitConn(nc, int(s.startups.Load()), log)
	if !ok {
		return nil, false
	}
	startup, ok := s.startup()
	if !ok {
		slot.Release()
		log.Warn("sshd: dropping connection: MaxStartups reached", "max_startups", s.cfg.MaxStartups)
		return nil, false
	}
	return func() { startup(); slot.Release() }, true
}
