// Package postauth is the post-auth process of offload sshd's process
// model: it runs as the user (uid, gid, supplementary groups, the user's
// limits), non-dumpable, and serves the connections the monitor hands it
// after their authentication. One process serves every connection of a
// user by default, so a host with one service user and thousands of
// connections runs a handful of processes.
//
// # Hand-over
//
// Each connection arrives as its socket and the transport state the
// pre-auth worker exported (keys, counters, sequence numbers, bytes read
// ahead): the transport resumes where it stood and the client notices
// nothing. Channels, sessions, SFTP, forwarding sockets and channel
// buffers live here, so they are the user's: a forwarded socket is owned
// by the user, the user's descriptor limit bounds them, and a crash ends
// only this user's connections.
//
// # Re-keying
//
// The host keys stay with the monitor: a key re-exchange asks it for the
// signature (remote.Signer). A restart hands the monitor's side of the
// socket to a session keeper (monitor.Detach, monitor.Resume), which
// answers from then on; the process notices nothing. Should the monitor
// go away without one, the connections go on until their next key
// exchange, which then fails.
//
// # PAM keeper
//
// With UsePAM a user's post-auth process is the child of a small root
// PAM keeper (sshd-pam in ps; PAMKeeperMain, pamkeeper.go) that
// opens the user's PAM session, starts this process, and closes the
// session when it ends. A server that runs in one process gives each
// connection a keeper too (OpenPAMKeeper, pamclient.go), which starts
// the connection's programs as the server's children (spawn.go).
package postauth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/offload/offload/internal/rawio"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/remote"
	"github.com/offload/offload/sshd/sandbox"
	"github.com/offload/offload/sshd/transport"
)

// Main runs a post-auth process on the monitor's socket until the monitor
// tells it to end or, once the monitor has gone, until its last
// connection ends. It returns the exit code.
func Main() int {
	if _, err := sandbox.EnterPostauth(); err != nil { // non-dumpable from the start
		fmt.Fprintln(os.Stderr, "offload sshd post-auth:", err)
		return 1
	}
	child, err := ipc.OpenChild()
	if err == nil {
		err = sandbox.CloseOnExec() // what it inherited reaches no program it starts
	}
	var acct *connection.Account
	if err == nil || errors.Is(err, sandbox.ErrUnsupported) {
		acct, err = confine(child.Config)
	}
	if err == nil || errors.Is(err, sandbox.ErrUnsupported) {
		err = remote.Become(child.Config) // the user, before any connection arrives
	}
	if err != nil && !errors.Is(err, sandbox.ErrUnsupported) {
		fmt.Fprintln(os.Stderr, "offload sshd post-auth:", err)
		return 1
	}
	rep, err := sandbox.EnterPostauth() // again: a change of identity resets it
	if err != nil {
		fmt.Fprintln(os.Stderr, "offload sshd post-auth:", err)
		return 1
	}
	p, err := newProcess(child, acct)
	if err != nil {
		p.log.Error("post-auth: cannot start", "err", err)
		return 1
	}
	p.log.Debug("post-auth: started", "user", child.Config.User, "sandbox", rep.String())
	p.wait()
	return 0
}

// process is the state of one post-auth process.
type process struct {
	peer *ipc.Peer
	cfg  *ipc.ChildConfig
	plan *plan.Plan
	tr   *transport.Server
	log  *slog.Logger

	ctx     context.Context // cancelled when told to end
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[uint64]*transport.Conn
	timers  map[uint64]*time.Timer // of the live connections, until settled
	settled map[uint64]bool        // connections that count toward setProcs
	end     chan struct{}          // closed when told to end
	once    sync.Once

	reporter *remote.Reporter    // nil without metrics
	pamEnv   []string            // from the PAM keeper, for every session
	pamUmask *fs.FileMode        // from the keeper when a session module set one
	pamMsgs  string              // the session modules' texts (pam_motd), from the keeper
	account  *connection.Account // resolved before a chroot, for every session
}

// confine enters the process's ChrootDirectory, if any, having resolved
// the user's account first: inside, the host's user database is out of
// reach.
func confine(cfg *ipc.ChildConfig) (*connection.Account, error) {
	if cfg.Chroot == "" {
		return nil, nil
	}
	acct, err := connection.ResolveAccount(cfg.User)
	if err != nil {
		return nil, err
	}
	return acct, sandbox.Chroot(cfg.Chroot)
}

func newProcess(child *ipc.Child, acct *connection.Account) (*process, error) {
	cfg := child.Config
	log := slog.New(ipc.NewLogHandler(child.Peer, cfg.LogLevel)).With("user", cfg.User)
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{peer: child.Peer, cfg: cfg, log: log, ctx: ctx, cancel: cancel,
		conns: map[uint64]*transport.Conn{}, timers: map[uint64]*time.Timer{}, settled: map[uint64]bool{}, end: make(chan struct{}), account: acct}
	p.pamEnv, p.pamUmask, p.pamMsgs = fromKeeper()
	setProcs(0) // one CPU until a connection settles
	metrics, reporter := remote.Metrics(child)
	p.reporter = reporter
	var err error
	if p.plan, err = plan.Parse(cfg.Plan); err != nil {
		return p, err
	}
	tc, _, err := p.plan.Build(plan.Postauth, child.Peer, log, metrics)
	if err != nil {
		return p, err
	}
	if p.tr, err = transport.NewServer(tc); err != nil {
		return p, err
	}
	return p, child.Serve(p.handle)
}

// wait returns when told to end (after the connections are closed), or
// when the monitor is gone and the last connection has ended.
func (p *process) wait() {
	select {
	case <-p.end:
		p.cancel()
	case <-p.peer.Done():
	}
	p.wg.Wait()
}

func (p *process) handle(m *ipc.Message) {
	switch m.Type {
	case ipc.TypeAdopt:
		p.adopt(m)
	case ipc.TypeCloseConn:
		closeFiles(m.Files)
		if cc, err := ipc.ParseCloseConn(m.Payload); err == nil {
			p.closeConn(cc)
		}
	default:
		closeFiles(m.Files)
		p.log.Warn("post-auth: unexpected message from the monitor", "type", m.Type.String())
	}
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// closeConn ends one connection, or with ConnID 0 all of them and the
// process.
func (p *process) closeConn(cc *ipc.CloseConn) {
	if cc.ConnID == 0 {
		p.once.Do(func() { close(p.end) })
		return
	}
	p.mu.Lock()
	c := p.conns[cc.ConnID]
	p.mu.Unlock()
	if c != nil {
		c.Disconnect(11, cc.Reason) // SSH_DISCONNECT_BY_APPLICATION
	}
}

// adopt resumes a handed-over connection and serves it.
func (p *process) adopt(m *ipc.Message) {
	a, err := ipc.ParseAdopt(m.Payload)
	if err != nil || len(m.Files) != 1 {
		closeFiles(m.Files)
		p.log.Error("post-auth: bad adopt message", "err", err, "files", len(m.Files))
		return
	}
	f := m.Files[0] // kept to read the socket's byte counts at the end
	nc, err := rawio.FileConn(f)
	if err != nil {
		p.done(a.ConnID, f, err)
		f.Close()
		return
	}
	p.wg.Add(1)
	go p.serve(a, nc, f)
}

// serve runs the connection protocol on an adopted connection; a panic
// ends only it.
func (p *process) serve(a *ipc.Adopt, nc net.Conn, f *os.File) {
	defer p.wg.Done()
	log := p.log
	if lv := slog.Level(a.LogLevel); lv != p.cfg.LogLevel {
		// LogLevel in a Match block: this connection's lines only.
		log = slog.New(ipc.NewLogHandler(p.peer, lv)).With("user", p.cfg.User)
	}
	log = log.With("conn", a.ConnID, "remote", a.Remote)
	var err error
	defer func() {
		if r := recover(); r != nil {
			log.Error("post-auth: panic serving connection", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			nc.Close()
			err = fmt.Errorf("panic: %v", r)
		}
		p.done(a.ConnID, f, err)
		f.Close()
	}()
	err = p.run(a, nc, log)
}

func (p *process) run(a *ipc.Adopt, nc net.Conn, log *slog.Logger) error {
	perms, cfg, st, err := decodeAdopt(a)
	if err != nil {
		nc.Close()
		return err
	}
	cfg.Logger = log
	if p.account != nil {
		cfg.Account = p.account
	}
	cfg.SetEnv = append(p.pamEnv, cfg.SetEnv...) // the PAM session's, then the configuration's
	if p.pamUmask != nil && cfg.Umask == nil {
		cfg.Umask = p.pamUmask // pam_umask's, as a session under OpenSSH inherits it
	}
	if cfg.LoginMessages == "" {
		cfg.LoginMessages = p.pamMsgs
	}
	if p.cfg.LoginRecords {
		cfg.Sessions = &recorder{peer: p.peer, id: a.ConnID}
	}
	signer := &remote.Signer{Peer: p.peer, ConnID: a.ConnID, Provenance: p.plan.HostKeyProvenance}
	tc, err := p.tr.Resume(nc, st, &transport.ConnOptions{Signer: signer, Logger: log, ID: a.ConnID})
	if err != nil {
		return err
	}
	p.track(a.ConnID, tc)
	defer p.untrack(a.ConnID)
	ctx := connection.WithAddrs(p.ctx, connection.Addrs{Remote: tc.RemoteAddr(), Local: tc.LocalAddr()})
	err = connection.Serve(ctx, tc, perms, connection.ForClient(cfg, tc.ClientVersion()))
	auth.LogSessionEnd(log, tc.RemoteAddr(), perms.User, err)
	return err
}

func decodeAdopt(a *ipc.Adopt) (*perm.Permissions, *connection.Config, *transport.State, error) {
	var perms perm.Permissions
	if err := perms.UnmarshalBinary(a.Perms); err != nil {
		return nil, nil, nil, fmt.Errorf("post-auth: %w", err)
	}
	var cfg connection.Config
	if err := cfg.UnmarshalBinary(a.Settings); err != nil {
		return nil, nil, nil, fmt.Errorf("post-auth: %w", err)
	}
	var st transport.State
	if err := st.UnmarshalBinary(a.State); err != nil {
		return nil, nil, nil, err
	}
	return &perms, &cfg, &st, nil
}

// settleAfter is how long a connection must last before it counts toward
// the process's CPUs (setProcs): a connection that ends at once (a health
// check, a login storm's) then changes no GOMAXPROCS, which stops the
// world, and wakes no thread of its own.
const settleAfter = 50 * time.Millisecond

func (p *process) track(id uint64, c *transport.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[id] = c
	p.timers[id] = time.AfterFunc(settleAfter, func() { p.settle(id) })
}

// settle counts connection id toward the process's CPUs.
func (p *process) settle(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, live := p.timers[id]; live && !p.settled[id] {
		p.settled[id] = true
		setProcs(len(p.settled))
	}
}

func (p *process) untrack(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, id)
	if t := p.timers[id]; t != nil {
		t.Stop()
		delete(p.timers, id)
	}
	if p.settled[id] {
		delete(p.settled, id)
		setProcs(len(p.settled))
	}
}

// setProcs runs the process on as many CPUs as it serves connections
// (that have lasted settleAfter), up to the machine's. One connection's goroutines (its read loop, a
// channel's sender, a pipe's pump) then take turns on one thread, as
// OpenSSH's one process per connection does, instead of waking each other
// across threads: a 1 GiB download in process ran 10-20% faster on
// 10-20% less CPU with GOMAXPROCS=1 (docs/benchmarks.md), and a user's
// parallel connections still get every CPU.
func setProcs(conns int) {
	want := min(max(conns, 1), runtime.NumCPU())
	if runtime.GOMAXPROCS(0) != want {
		runtime.GOMAXPROCS(want)
	}
}

// done tells the monitor a connection has ended, with the bytes its
// socket carried.
func (p *process) done(id uint64, sock *os.File, err error) {
	if p.reporter != nil {
		p.reporter.Flush()
	}
	p.peer.Notify(ipc.TypeConnDone, ipc.NewConnDone(id, sock, ipc.OutcomeClosed, err).Marshal())
}
