// Package monitor is the privileged side of offload sshd's process model:
// it holds the host keys (and with them the PKCS #11 module), the
// configuration and the account policy, starts and watches the pre-auth
// workers and the post-auth processes, and answers their few requests.
//
// # What it answers
//
// Every message a child sends is looked up in one table (table.go): for
// its type, the roles that may send it and, for one that names a
// connection, the stages of that connection in which each role may.
// Nothing else reaches a handler. The stages of a connection are kex
// (pre-auth, before its first key exchange is signed), busy (a
// once-only request for it is being served: every other request is
// refused meanwhile), auth (first exchange signed: its session
// identifier is known), login (authentication begun), over (the
// monitor's Disconnect verdict ended its authentication), authed (the
// login granted, its worker exporting it) and handed (with its
// post-auth process). In the table, * is a message that names no
// connection and - a role that may not send it:
//
//	message       kind     pre-auth worker                  post-auth  keeper  once-only in
//	ready         note     *                                *          *       -
//	log           note     *                                *          *       -
//	metrics       note     *                                *          -       -
//	conn-done     note     kex,busy,auth,login,over,authed  handed     -       -
//	aead-close    note     -                                *          -       -
//	aead-origin   note     -                                handed     -       -
//	sign          request  kex,auth,login                   handed     -       kex
//	prove         request  auth,login,authed                handed     -       -
//	begin-decide  request  auth                             -          -       -
//	decide        request  login                            -          -       -
//	respond       request  login                            -          -       -
//	handoff       request  authed                           -          -       authed
//	login-record  request  -                                handed     -       -
//	aead-new      request  -                                *          -       -
//	aead-seal     request  -                                *          -       -
//	aead-open     request  -                                *          -       -
//
// So a worker has one first-exchange signature per connection, signed
// re-exchanges within limits (rates.go), a login begun once with its
// first request (begin-decide) and decided by the monitor's own
// auth.Authority, which verifies every signature over the session
// identifier the monitor signed, and one hand-over once that login is
// granted. A post-auth process has re-exchange signatures, host-key
// proofs and login records for its connections and the AEADs the
// configuration keeps on a token (Transport.Remote), with which packets
// of its connections each protects (aead-origin, for the monitor's log
// lines); a session keeper
// only logs.
//
// A message of a type not in the table breaks the protocol: the child
// is stopped (a worker is started again in its place); from a session
// keeper, which is root and outlives the process it serves, it is
// dropped. A request the table refuses is answered with the reason and
// logged; a notification it refuses is dropped. Handlers check what is
// particular to a request (a host key of this server and a hash of an
// exchange's size, the re-exchange rates, a login record's terminal)
// and, under the lock of the change they make, that two requests that
// passed the table at once do not both make it.
//
// # Sockets
//
// The monitor keeps its own copy of each connection's socket until the
// hand-over and passes that copy, not the worker's, to the post-auth
// process: a worker cannot substitute another socket. It ends a
// connection that overstays LoginGraceTime itself, whatever its worker
// does.
//
// # Processes
//
// Pre-auth workers (Config.Workers, about one per core) serve many
// connections each; one that dies ends only its connections and is
// started again at once (connections admitted meanwhile wait for it).
// Its death is charged to a client only when that client is shown to
// have caused it (crash.go); the others' connections end as
// ipc.OutcomeLost, with no penalty. Post-auth processes run one per user (or one per
// connection, Config.PerConnection) as that user, and end when they have
// had no connection for Config.Linger.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/rawio"
	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/loginrec"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/plan"
	"github.com/offload/offload/sshd/sshlog"
	"github.com/offload/offload/sshd/transport"
)

// Login is the authentication of one connection as the monitor runs it:
// an auth.Authority, and once Begin has fixed the user (and with it the
// Match blocks that apply), the connection layer's settings.
type Login interface {
	auth.Authority
	// Settings returns the connection settings for the login, valid once
	// Begin has succeeded.
	Settings() *connection.Config
}

// Processes configures the separated process model: what a user of the
// server library chooses (sshd.Separation is this type). The zero value
// is useful.
type Processes struct {
	// Executable is the program started for the children; it must call
	// sshd.RunChild first thing in main (default: this program, as
	// /proc/self/exe).
	Executable string
	// Workers is the number of pre-auth workers (0: the number of CPUs).
	Workers int
	// WorkerUser is the unprivileged account of the pre-auth workers when
	// the monitor runs as root ("" : "sshd" where it exists, else "nobody").
	WorkerUser string
	// PerConnection runs one post-auth process per connection instead of
	// one per user.
	PerConnection bool
	// Linger is how long a post-auth process with no connection left
	// waits for a new one before it ends (0: DefaultLinger; negative:
	// it ends at once).
	Linger time.Duration
	// LogLevel is the children's log level (their lines go through the
	// monitor's Logger).
	LogLevel slog.Level
	// OnConnEnd, when set, is called once for each connection that ends,
	// with the bytes its socket carried (the connections do not pass
	// through the server's process, so a wrapper of the net.Conn would
	// count nothing).
	OnConnEnd func(ConnEnd)
}

// Config configures a Monitor.
type Config struct {
	Processes
	// HostKeys signs for the host keys HostPublicKeys names.
	HostKeys       transport.HostKeySigner
	HostPublicKeys []ssh.PublicKey
	// Plan is what the children construct their transport from; its
	// HostPublicKeys are filled in from HostPublicKeys, and the post-auth
	// assignments are resolved again from Registry for each post-auth
	// process started.
	Plan plan.Plan
	// LoginGraceTime bounds the time to authenticate (0:
	// auth.DefaultLoginGraceTime, negative: no bound).
	LoginGraceTime time.Duration
	// MaxRequests bounds the userauth requests of a connection.
	MaxRequests int
	// NewLogin makes the Login of a connection once its first key
	// exchange is done: sessionID is the exchange hash the monitor signed
	// and hostKey the host key it signed with (wire form), which
	// publickey-hostbound-v00@openssh.com requests must name.
	NewLogin func(sessionID, hostKey []byte, local, remote net.Addr) (Login, error)
	// Logger receives the monitor's lines and those its children send.
	Logger *slog.Logger
	// Metrics, when set, receives the provider counts of the children.
	Metrics *provider.Metrics
	// Registry serves the AEADs the plan places in the monitor to post-auth
	// processes (bulk crypto on a token).
	Registry *provider.Registry
	// LoginRecords, when set, writes the login records of the post-auth
	// processes' pty sessions.
	LoginRecords LoginRecorder
}

// ConnEnd describes a connection that has ended.
type ConnEnd struct {
	Remote            net.Addr
	User              string // "" when it did not authenticate
	Outcome           ipc.Outcome
	Duration          time.Duration
	BytesIn, BytesOut uint64       // on the wire
	Auth              auth.Summary // how its authentication went
}

// DefaultLinger is the default Config.Linger.
const DefaultLinger = 10 * time.Second

// Errors of Admit.
var (
	ErrClosed   = errors.New("monitor: shutting down")
	ErrNoSocket = errors.New("monitor: connection has no socket descriptor")
)

// Monitor is the privileged process's state.
type Monitor struct {
	cfg    Config
	log    *slog.Logger
	exe    string
	wid    *ipc.Identity // of the pre-auth workers; nil: the monitor's own
	root   bool
	linger time.Duration
	nextID atomic.Uint64
	rates  *rates
	pam    pamWork // requests that may be waiting in PAM
	table  table   // what the children may send (table.go)
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	workers  []*child
	conns    map[uint64]*mconn
	waiting  []*mconn // admitted while no worker could take them
	post     map[string]*child
	suspects map[netip.Addr]suspect // sources seen on a dead worker (crash.go)
	deaths   uint64                 // pre-auth worker deaths
	closing  bool
	kids     sync.WaitGroup // child processes not yet reaped
	handed   bool           // Detach gave the sessions to a keeper (keeper.go)
	reaping  bool           // Shutdown waits for the child processes: no more start
}

// New checks cfg and starts the pre-auth workers.
func New(cfg Config) (*Monitor, error) {
	m, err := newMonitor(cfg)
	if err != nil {
		return nil, err
	}
	n := cfg.Workers
	if n <= 0 {
		n = runtime.NumCPU()
	}
	for i := 0; i < n; i++ {
		w, err := m.startWorker(i)
		if err != nil {
			m.Shutdown(context.Background())
			return nil, err
		}
		m.workers = append(m.workers, w)
	}
	m.log.Info("monitor: pre-auth workers started", "workers", n, "user", m.workerUserName())
	return m, nil
}

func newMonitor(cfg Config) (*Monitor, error) {
	if cfg.HostKeys == nil || len(cfg.HostPublicKeys) == 0 || cfg.NewLogin == nil {
		return nil, errors.New("monitor: HostKeys, HostPublicKeys and NewLogin are required")
	}
	m := &Monitor{cfg: cfg, log: cfg.Logger, exe: cfg.Executable, root: os.Geteuid() == 0,
		conns: map[uint64]*mconn{}, post: map[string]*child{}, rates: newRates(), linger: cfg.Linger,
		suspects: map[netip.Addr]suspect{}, table: newTable()}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.linger == 0 {
		m.linger = DefaultLinger
	}
	if m.cfg.LoginGraceTime == 0 {
		m.cfg.LoginGraceTime = auth.DefaultLoginGraceTime
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, k := range cfg.HostPublicKeys {
		m.cfg.Plan.HostPublicKeys = append(m.cfg.Plan.HostPublicKeys, k.Marshal())
	}
	if m.exe == "" {
		// The kernel resolves this link to the running program without
		// walking its directories, so an unprivileged child can start it
		// from a directory only root may enter, and an upgrade on disk
		// does not mix versions.
		m.exe = "/proc/self/exe"
	}
	var err error
	m.wid, err = workerIdentity(cfg.WorkerUser, m.root)
	return m, err
}

// phase of a connection.
type phase int

const (
	phasePreauth phase = iota // with a worker, not yet authenticated
	phaseAuthed               // authenticated, the worker is exporting it
	phaseHanded               // with its post-auth process
	phaseDone
)

// mconn is the monitor's record of one connection.
type mconn struct {
	id            uint64
	file          *os.File // the monitor's copy of the socket, until the hand-over
	local, remote net.Addr
	owner         *child
	phase         phase
	sessionID     []byte
	hostKey       []byte // that signed the first exchange (wire form)
	login         Login
	user          string
	perms         *perm.Permissions
	settings      *connection.Config
	busy          *call    // the once-only request being served for it (table.go)
	begun         bool     // its authentication has begun
	authOver      bool     // the login ended with a Disconnect verdict: nothing more is answered
	signs         bucket   // pre-auth re-exchanges
	turn          signGate // one post-auth signature at a time (rates.go)
	grace         *time.Timer
	done          chan struct{}
	preauthEnd    func() // called once when the connection leaves pre-auth
	outcome       ipc.Outcome
	start         time.Time
	bytesIn       uint64 // as the child that served it last counted
	bytesOut      uint64

	// The login is used by one request at a time (a worker may send
	// several at once) and closed once: lmu guards login and loginDone.
	lmu       sync.Mutex
	loginDone bool
	ttys      map[string]loginrec.Record // pty sessions with login records, guarded by Monitor.mu
	proofs    int                        // hostkeys-prove signatures made, guarded by Monitor.mu
	ctx       context.Context            // ends with the connection: bounds its decisions
	cancel    context.CancelFunc
}

// Admit takes a new connection: the monitor keeps a copy of its socket
// and gives it to the least busy pre-auth worker; while none can take it
// (they are being restarted) it waits, within LoginGraceTime, for one
// that can. nc is closed (the copies live on). preauthEnd is called
// once, when the connection is authenticated or has ended. The returned
// channel is closed when the connection has ended, wherever it was
// served.
func (m *Monitor) Admit(nc net.Conn, preauthEnd func()) (<-chan struct{}, error) {
	local, remote := nc.LocalAddr(), nc.RemoteAddr()
	f, err := socketFile(nc)
	nc.Close()
	if err != nil {
		return nil, err
	}
	c := &mconn{id: m.nextID.Add(1), file: f, local: local, remote: remote,
		done: make(chan struct{}), preauthEnd: onceFunc(preauthEnd), signs: newConnBucket(),
		start: time.Now()}
	c.ctx, c.cancel = context.WithCancel(m.ctx)
	if err := m.register(c); err != nil {
		f.Close()
		return nil, err
	}
	m.dispatch(c)
	return c.done, nil
}

// dispatch gives c to the least busy live worker, or leaves it waiting
// for one. A worker whose channel fails to take it is stopped (and
// started again), and c goes to another.
func (m *Monitor) dispatch(c *mconn) {
	for {
		w := m.assign(c)
		if w == nil {
			return
		}
		msg := (&ipc.NewConn{ConnID: c.id, Local: c.local.String(), Remote: c.remote.String()}).Marshal()
		err := w.peer.Notify(ipc.TypeNewConn, msg, c.file)
		if err == nil {
			return
		}
		m.mu.Lock()
		if c.owner == w {
			delete(w.conns, c.id)
			c.owner = nil
		}
		m.mu.Unlock()
		w.violation(fmt.Errorf("passing a connection: %w", err))
	}
}

// assign makes the least busy live worker c's owner and returns it; with
// none, c joins the waiting connections and assign returns nil (also for
// a c that has ended).
func (m *Monitor) assign(c *mconn) *child {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.phase != phasePreauth {
		return nil
	}
	var best *child
	for _, w := range m.workers {
		if w.alive() && (best == nil || len(w.conns) < len(best.conns)) {
			best = w
		}
	}
	if best == nil {
		m.waiting = append(m.waiting, c)
		return nil
	}
	c.owner = best
	best.conns[c.id] = c
	return best
}

func onceFunc(f func()) func() {
	if f == nil {
		return func() {}
	}
	return sync.OnceFunc(f)
}

// socketFile returns a copy of nc's descriptor.
func socketFile(nc net.Conn) (*os.File, error) {
	fc, ok := nc.(interface{ File() (*os.File, error) })
	if !ok {
		return nil, ErrNoSocket
	}
	f, err := fc.File()
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	return f, nil
}

// register records c and starts its LoginGraceTime.
func (m *Monitor) register(c *mconn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return ErrClosed
	}
	m.conns[c.id] = c
	if g := m.cfg.LoginGraceTime; g > 0 {
		c.grace = time.AfterFunc(g, func() { m.graceExceeded(c) })
	}
	return nil
}

// graceExceeded ends a connection that has not authenticated in time: the
// monitor shuts its own copy of the socket, so the worker cannot keep it.
func (m *Monitor) graceExceeded(c *mconn) {
	m.mu.Lock()
	owner, ph := c.owner, c.phase
	m.mu.Unlock()
	if ph != phasePreauth && ph != phaseAuthed {
		return
	}
	ap, _ := netip.ParseAddrPort(c.remote.String())
	m.log.Info(fmt.Sprintf("Timeout before authentication for %s port %d", ap.Addr().Unmap(), ap.Port()), sshlog.Worded(),
		"conn", c.id, "remote", c.remote.String())
	if owner != nil {
		owner.peer.Notify(ipc.TypeCloseConn, (&ipc.CloseConn{ConnID: c.id, Reason: "login grace time exceeded"}).Marshal())
	}
	m.finish(c, ipc.OutcomeGrace, nil)
}

// finish ends the monitor's record of c (once).
func (m *Monitor) finish(c *mconn, out ipc.Outcome, err error) {
	m.mu.Lock()
	if c.phase == phaseDone {
		m.mu.Unlock()
		return
	}
	if c.phase == phaseHanded && (out == ipc.OutcomeCrash || out == ipc.OutcomeLost) {
		out = ipc.OutcomeClosed // after the login: the user's own process, never a penalty
	}
	c.phase, c.outcome = phaseDone, out
	delete(m.conns, c.id)
	owner := c.owner
	if owner != nil {
		delete(owner.conns, c.id)
	} else {
		m.waiting = slices.DeleteFunc(m.waiting, func(x *mconn) bool { return x == c })
	}
	m.mu.Unlock()
	if c.file != nil {
		c.bytesIn, c.bytesOut, _ = rawio.TCPBytes(c.file)
		syscall.Shutdown(int(c.file.Fd()), syscall.SHUT_RDWR)
		c.file.Close()
	}
	if c.grace != nil {
		c.grace.Stop()
	}
	c.preauthEnd()
	if owner != nil && owner.role == ipc.RolePostauth {
		m.maybeIdle(owner)
	}
	c.cancel() // a decision in progress returns
	if m.cfg.LoginRecords != nil {
		m.logoutAll(c)
	}
	go m.ended(c, out, err)
}

// ended reports an ended connection once its login is closed (a
// decision in progress has returned).
func (m *Monitor) ended(c *mconn, out ipc.Outcome, err error) {
	sum := m.closeLogin(c)
	if out != ipc.OutcomeCrash && out != ipc.OutcomeLost {
		m.cleared(addrOf(c.remote))
	}
	m.log.Debug("monitor: connection ended", "conn", c.id, "outcome", out.String(), "err", err,
		"duration", time.Since(c.start), "bytes_in", c.bytesIn, "bytes_out", c.bytesOut)
	if m.cfg.OnConnEnd != nil {
		m.cfg.OnConnEnd(ConnEnd{Remote: c.remote, User: c.user, Outcome: out, Duration: time.Since(c.start),
			BytesIn: c.bytesIn, BytesOut: c.bytesOut, Auth: sum})
	}
	close(c.done)
}

// closeLogin ends the login's work (a PAM transaction, say) once and
// returns what its authentication came to.
func (m *Monitor) closeLogin(c *mconn) auth.Summary {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	var sum auth.Summary
	if s, ok := c.login.(auth.Summarizer); ok {
		sum = s.Summary()
	}
	if cl, ok := c.login.(io.Closer); ok && !c.loginDone {
		cl.Close()
	}
	c.loginDone = true
	return sum
}

// Shutdown stops admitting, ends the connections still authenticating,
// waits until ctx is done for authenticated ones to end, then tells every
// post-auth process to close its connections, and waits for the children.
func (m *Monitor) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if m.handed { // Detach has stopped the rest; the sessions are the keeper's
		m.mu.Unlock()
		return nil
	}
	m.closing = true
	pre := m.connsIn(phasePreauth, phaseAuthed)
	m.mu.Unlock()
	for _, c := range pre {
		m.finish(c, ipc.OutcomeClosed, ErrClosed)
	}
	err := m.waitConns(ctx)
	m.mu.Lock()
	kids := append([]*child(nil), m.workers...)
	for _, p := range m.post {
		kids = append(kids, p)
	}
	m.mu.Unlock()
	for _, k := range kids {
		k.end("server shutting down")
	}
	m.cancel()
	m.mu.Lock()
	m.reaping = true // a worker respawned meanwhile is not started (addKid)
	m.mu.Unlock()
	m.kids.Wait()
	return err
}

// addKid counts a child process about to start, unless Shutdown has
// begun to wait for them (false): a WaitGroup must not grow from zero
// while it is waited for, and a process started then would outlive the
// monitor's shutdown.
func (m *Monitor) addKid() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reaping {
		return false
	}
	m.kids.Add(1)
	return true
}

func (m *Monitor) connsIn(phases ...phase) []*mconn {
	var out []*mconn
	for _, c := range m.conns {
		for _, p := range phases {
			if c.phase == p {
				out = append(out, c)
			}
		}
	}
	return out
}

// waitConns waits for every connection to end, until ctx is done.
func (m *Monitor) waitConns(ctx context.Context) error {
	for {
		m.mu.Lock()
		var c *mconn
		for _, x := range m.conns {
			c = x
			break
		}
		m.mu.Unlock()
		if c == nil {
			return nil
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Stats are counts for logs and metrics.
type Stats struct {
	Workers, PostAuth, Preauth, Authenticated int
}

// Stats returns the current counts.
func (m *Monitor) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{Workers: len(m.workers), PostAuth: len(m.post)}
	for _, c := range m.conns {
		if c.phase == phaseHanded {
			s.Authenticated++
		} else {
			s.Preauth++
		}
	}
	return s
}
