package monitor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/sshlog"
)

// Timeouts of a child's life.
const (
	readyTimeout   = 15 * time.Second // from exec to the child's Ready
	endTimeout     = 5 * time.Second  // from "end" to a kill
	maxInFlight    = 256              // requests of one child served at once
	respawnBackoff = time.Second
	exitGrace      = time.Second // from a child's channel closing to its exit
	maxStderrLine  = 4 << 10
)

// child is a pre-auth worker or post-auth process.
type child struct {
	m      *Monitor
	role   string
	name   string // for ps and logs: "offload-sshd: pre-auth 1", "offload-sshd: alice"
	key    string // post-auth: its key in Monitor.post
	slot   int    // pre-auth: its index in Monitor.workers
	user   string // post-auth: the account it runs as
	chroot string // post-auth: its ChrootDirectory, "" for none
	cmd    *exec.Cmd
	peer   *ipc.Peer
	conns  map[uint64]*mconn // guarded by m.mu

	sem       chan struct{}
	work      chan *ipc.Message // to an idle request handler
	started   chan struct{}     // closed once the child is ready or failed to start
	startErr  error
	readyOnce sync.Once
	ready     chan struct{}
	aeads     *AEADServer      // post-auth: AEADs held for it
	keeper    *ipc.ChildConfig // post-auth with a PAM session: the root keeper's settings
	session   *ipc.Peer        // the PAM keeper's socket (its log lines)
	identity  *ipc.Identity    // who it runs as; nil: the monitor's own
	ending    bool             // guarded by m.mu: told to end, or ended
	idle      *time.Timer
	exited    chan struct{}  // closed when the process has been reaped
	busy      *ipc.BusyTable // pre-auth: the connections it is working on
	readyAt   atomic.Int64   // when it said it was ready (Unix nanoseconds)
	// logFloor is the lowest level of the lines the monitor relays for
	// a post-auth process: the children's level, lowered by connections
	// a Match block logs more of (the process sends their lines only).
	logFloor atomic.Int64
}

func newChild(m *Monitor, role, name string) *child {
	c := &child{m: m, role: role, name: name, conns: map[uint64]*mconn{},
		sem: make(chan struct{}, maxInFlight), work: make(chan *ipc.Message), started: make(chan struct{}), ready: make(chan struct{}),
		exited: make(chan struct{}), aeads: &AEADServer{Registry: m.cfg.Registry, Remote: m.cfg.Plan.Remote(), Log: m.log.With("proc", name)}}
	c.logFloor.Store(int64(m.cfg.LogLevel))
	return c
}

// lowerLogFloor lets the monitor relay the child's lines from level up,
// for a connection whose LogLevel (in a Match block) is below the
// server's; the floor never rises again for the process's life.
func (c *child) lowerLogFloor(level slog.Level) {
	for {
		old := c.logFloor.Load()
		if int64(level) >= old || c.logFloor.CompareAndSwap(old, int64(level)) {
			return
		}
	}
}

// relayLog writes a child's line into the monitor's log: at the
// monitor's level, or, for a line at or above the floor a Match block's
// LogLevel set, regardless of the server's level.
//
// A pre-auth worker's lines are marked as OpenSSH's monitor marks its
// pre-auth child's (sshlog.MarkPreauth): a worker a client took over
// cannot write lines that read as the monitor's.
func (c *child) relayLog(l *ipc.Log) {
	if c.role == ipc.RolePreauth {
		l.Msg = sshlog.MarkPreauth(l.Msg)
	}
	log := c.m.log
	if lv := slog.Level(l.Level); lv >= slog.Level(c.logFloor.Load()) && !log.Enabled(context.Background(), lv) {
		log = slog.New(passHandler{log.Handler()})
	}
	ipc.Relay(log, c.name, l)
}

// passHandler hands every record to its handler, whatever the level.
type passHandler struct{ slog.Handler }

func (passHandler) Enabled(context.Context, slog.Level) bool { return true }

// alive reports whether the child can take work; m.mu is held.
func (c *child) alive() bool {
	select {
	case <-c.started:
	default:
		return false
	}
	if c.startErr != nil || c.ending {
		return false
	}
	select {
	case <-c.peer.Done():
		return false // its channel broke: it is being stopped
	default:
		return true
	}
}

// launch starts the child's process as cred (nil: the monitor's identity),
// sends it cfg and waits until it is ready.
func (c *child) launch(cfg *ipc.ChildConfig, env []string) error {
	c.identity = cfg.Identity
	err := c.start(cfg, env)
	if err == nil {
		err = c.waitReady()
	}
	c.startErr = err
	close(c.started)
	if err != nil && c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Kill()
	}
	return err
}

func (c *child) start(cfg *ipc.ChildConfig, env []string) error {
	parent, sock, err := ipc.Pair()
	if err != nil {
		return err
	}
	defer sock.Close()
	files := []*os.File{sock}
	var ctl *os.File
	role := c.role
	if c.keeper != nil { // fd 3: the keeper's socket; fd 4: the post-auth process's
		role = ipc.RolePAMKeeper // what the program runs first; the monitor talks to the post-auth process
		var kc *os.File
		if ctl, kc, err = ipc.Pair(); err != nil {
			parent.Close()
			return err
		}
		defer kc.Close()
		files = []*os.File{kc, sock}
	}
	if c.role == ipc.RolePreauth { // fd 4: the busy table
		bf, err := c.newBusyTable()
		if err != nil {
			parent.Close()
			return err
		}
		defer bf.Close()
		files = append(files, bf)
		env = append([]string{ipc.BusyFDEnv + "=" + strconv.Itoa(ipc.ChildFD+len(files)-1)}, env...)
	}
	c.cmd = &exec.Cmd{Path: c.m.exe, Args: []string{c.name}, Dir: "/", ExtraFiles: files,
		Env:         append([]string{ipc.RoleEnv + "=" + role}, env...),
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}} // it drops to cfg.Identity itself
	// No Pdeathsig: it fires when the forking OS thread ends, and the
	// monitor retires threads (sandbox.OpenAs). A worker ends when its
	// socket to the monitor closes, which the monitor's death does too.
	// Our own pipe, not StderrPipe: Wait closes that one as soon as the
	// process is reaped, and a crash report still in it was lost ("read
	// |0: file already closed"). This end is read to EOF, which comes
	// when the child and whatever inherited its stderr are gone.
	stderr, childErr, err := os.Pipe()
	if err != nil {
		parent.Close()
		return fmt.Errorf("monitor: %w", err)
	}
	c.cmd.Stderr = childErr
	start := c.cmd.Start
	if c.cmd.SysProcAttr.Pdeathsig != 0 {
		start = func() error { return startChild(c.cmd) }
	}
	if !c.m.addKid() {
		childErr.Close()
		stderr.Close()
		parent.Close()
		return ErrClosed
	}
	err = start()
	childErr.Close()
	if err != nil {
		c.m.kids.Done()
		stderr.Close()
		parent.Close()
		return fmt.Errorf("monitor: starting %s: %w", c.name, err)
	}
	go c.relayStderr(stderr)
	if c.peer, err = ipc.NewPeer(parent, c.handle); err != nil {
		c.cmd.Process.Kill()
		go c.reap()
		return err
	}
	go c.reap()
	go c.runPeer()
	if ctl != nil {
		if err := c.startKeeper(ctl); err != nil {
			return err
		}
	}
	b, err := cfg.Marshal()
	if err == nil {
		err = c.peer.Notify(ipc.TypeConfig, b)
	}
	return err
}

// newBusyTable makes the worker's busy table and returns the worker's
// descriptor of it.
func (c *child) newBusyTable() (*os.File, error) {
	t, f, err := ipc.NewBusyTable()
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	c.busy = t
	return f, nil
}

// runPeer reads the child's messages. A pre-auth worker whose channel
// breaks while it is meant to run (an empty or oversized datagram, a
// reply to a request never made, a descriptor the monitor cannot
// receive) is one the monitor can neither serve nor trust: it is killed,
// and a worker is started again in its place. (A post-auth process's
// channel ends when that process exits; its PAM keeper, the
// process the monitor started, lives on to close the session.)
func (c *child) runPeer() {
	err := c.peer.Run()
	if c.peer.Detached() || c.role != ipc.RolePreauth {
		return // handed to a session keeper (keeper.go), or not a worker
	}
	// A child that exits closes its end of the channel first: then it is
	// its exit, which reap handles, not a broken channel.
	for deadline := time.Now().Add(exitGrace); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case <-c.exited:
			return
		default:
		}
		if hasExited(c.cmd.Process.Pid) {
			return
		}
	}
	c.stop("monitor: the channel to a child broke; stopping it", err)
}

// hasExited reports whether process pid has exited (reaped or not),
// without reaping it.
func hasExited(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || info.Signo != 0 // SIGCHLD: a child in that state was found
}

// startKeeper sends a PAM keeper its settings on its own socket
// and relays its log lines.
func (c *child) startKeeper(ctl *os.File) error {
	p, err := ipc.NewPeer(ctl, c.keeperMessage)
	if err != nil {
		return err
	}
	c.session = p
	go p.Run()
	b, err := c.keeper.Marshal()
	if err == nil {
		err = p.Notify(ipc.TypeConfig, b)
	}
	return err
}

func (c *child) waitReady() error {
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-c.ready:
		return nil
	case <-c.peer.Done():
		return fmt.Errorf("monitor: %s ended before it was ready: %w", c.name, c.peer.Err())
	case <-t.C:
		return fmt.Errorf("monitor: %s not ready within %v", c.name, readyTimeout)
	}
}

// relayStderr logs what the child writes to its standard error (a Go
// runtime crash report, say), line by line and bounded.
func (c *child) relayStderr(r io.ReadCloser) {
	defer r.Close()
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 1024), maxStderrLine)
	for s.Scan() {
		c.m.log.Warn("monitor: child output", "proc", c.name, "line", s.Text())
	}
	io.Copy(io.Discard, r) // after an over-long line
}

// reap waits for the process to exit, then ends what it served.
func (c *child) reap() {
	defer c.m.kids.Done()
	err := c.cmd.Wait()
	close(c.exited)
	c.aeads.CloseAll()
	if c.peer != nil {
		c.peer.Close()
	}
	c.m.childDied(c, err)
}

// end tells the child to finish: a post-auth process closes its
// connections and exits, a worker exits when its socket closes. A child
// that does not go is killed.
func (c *child) end(reason string) {
	c.m.mu.Lock()
	c.ending = true
	c.m.mu.Unlock()
	<-c.started
	if c.peer == nil {
		return
	}
	if c.role == ipc.RolePostauth {
		c.peer.Notify(ipc.TypeCloseConn, (&ipc.CloseConn{ConnID: 0, Reason: reason}).Marshal())
	} else {
		c.peer.Close()
	}
	go func() {
		t := time.NewTimer(endTimeout)
		defer t.Stop()
		select {
		case <-c.exited:
		case <-t.C:
			c.cmd.Process.Kill()
		}
	}()
}

// handle takes a message from the child, as the table says (table.go).
// Children never send descriptors; a type not in the table breaks the
// protocol. Requests are served on goroutines, at most maxInFlight at a
// time; notifications at once.
func (c *child) handle(msg *ipc.Message) {
	if len(msg.Files) > 0 {
		for _, f := range msg.Files {
			f.Close()
		}
		c.violation(fmt.Errorf("%v message carried a descriptor", msg.Type))
		return
	}
	e, ok := c.m.table[msg.Type]
	switch {
	case !ok:
		c.violation(fmt.Errorf("unexpected %v message", msg.Type))
	case e.request:
		c.request(e, msg)
	default:
		c.notified(e, msg)
	}
}

// keeperMessage takes a message from the child's PAM keeper: the
// notifications the table allows a keeper are served (they cannot
// fail); anything else is dropped (the keeper, root, outlives the
// process it serves: it is not stopped).
func (c *child) keeperMessage(msg *ipc.Message) {
	for _, f := range msg.Files {
		f.Close()
	}
	e, ok := c.m.table[msg.Type]
	if !ok || e.request {
		return
	}
	if in, err := c.m.admit(c, roleKeeper, e, msg); err == nil {
		e.serve(c.m, in)
	}
}

// violation ends a child that broke the protocol: it is less privileged
// and not to be argued with.
func (c *child) violation(err error) {
	c.stop("monitor: child broke the protocol; stopping it", err)
}

// stop kills the child for cause err: its connections end without a
// penalty for their clients (the monitor stopped it), and a worker is
// started again in its place.
func (c *child) stop(msg string, err error) {
	c.m.mu.Lock()
	already := c.ending
	c.ending = true
	c.m.mu.Unlock()
	if !already {
		c.m.log.Error(msg, "proc", c.name, "err", err)
	}
	c.peer.Close()
	if c.cmd.Process != nil {
		c.cmd.Process.Kill()
	}
}

// ready notes that the child is ready (a keeper's readiness is waited
// for by no one).
func (m *Monitor) ready(in *call) ([]byte, error) {
	if in.role != roleKeeper {
		c := in.c
		c.readyOnce.Do(func() { c.readyAt.Store(time.Now().UnixNano()); close(c.ready) })
	}
	return nil, nil
}

// relay relays a log line; a malformed one is dropped.
func (m *Monitor) relay(in *call) ([]byte, error) {
	l, err := ipc.ParseLog(in.p)
	switch {
	case err != nil:
	case in.role == roleKeeper:
		ipc.Relay(m.log, in.c.name+" [session]", l)
	default:
		in.c.relayLog(l)
	}
	return nil, nil
}

// connDone ends a connection the child reports ended.
func (m *Monitor) connDone(in *call) ([]byte, error) {
	d, err := ipc.ParseConnDone(in.p)
	if err != nil {
		return nil, err
	}
	var cause error
	if d.Err != "" {
		cause = errors.New(d.Err)
	}
	conn := in.conn
	m.mu.Lock()
	conn.bytesIn, conn.bytesOut = d.BytesIn, d.BytesOut
	m.mu.Unlock()
	m.finish(conn, m.observed(conn, d.Outcome), cause)
	return nil, nil
}

// observed is the outcome of a connection a child reported ended, as far
// as the monitor can check it: a crash is the monitor's own finding (a
// process it watched died), never a child's word, and LoginGraceTime is
// exceeded only once it has passed since the monitor admitted the
// connection. A child cannot thus get a penalty put on a client.
func (m *Monitor) observed(conn *mconn, out ipc.Outcome) ipc.Outcome {
	switch out {
	case ipc.OutcomeCrash, ipc.OutcomeLost, ipc.OutcomeHandedOver:
		return ipc.OutcomeClosed
	case ipc.OutcomeGrace:
		if g := m.cfg.LoginGraceTime; g <= 0 || time.Since(conn.start) < g {
			return ipc.OutcomeNoAuth
		}
	}
	return out
}

func (m *Monitor) metrics(in *call) ([]byte, error) {
	mt, err := ipc.ParseMetrics(in.p)
	if err != nil {
		return nil, err
	}
	if m.cfg.Metrics != nil {
		addMetrics(m.cfg.Metrics, mt)
	}
	return nil, nil
}

// addMetrics adds a child's samples to sink; samples naming an unknown
// operation are skipped.
func addMetrics(sink *provider.Metrics, mt *ipc.Metrics) {
	for _, s := range mt.Samples {
		sink.Add(provider.Sample(s))
	}
}

// request serves a request of the child.
func (c *child) request(e *entry, msg *ipc.Message) {
	if c.role == ipc.RolePreauth && c.pamRequest(e, msg) {
		return
	}
	select {
	case c.sem <- struct{}{}:
	default:
		e.wipe(msg)
		c.peer.Reply(msg, nil, errors.New("monitor busy"))
		return
	}
	select {
	case c.work <- msg: // an idle handler takes it
	default:
		go c.serveRequests(msg)
	}
}

// handlerIdle is how long a request handler waits for another request
// before it ends.
const handlerIdle = 10 * time.Second

// serveRequests serves msg, then the child's next requests while they
// keep coming. A handler's stack has grown to what a signature or a
// verification needs; a new goroutine for each request grew it again
// each time (9% of the monitor's CPU at 16 concurrent logins).
func (c *child) serveRequests(msg *ipc.Message) {
	idle := time.NewTimer(handlerIdle)
	defer idle.Stop()
	for {
		out, err := c.m.serve(c, c.m.table[msg.Type], msg)
		c.peer.Reply(msg, out, err)
		<-c.sem
		idle.Reset(handlerIdle)
		select {
		case msg = <-c.work:
		case <-idle.C:
			return
		case <-c.peer.Done():
			return
		}
	}
}

// childDied ends the connections of a child that exited and starts a
// worker again in its place. The connections it held are closed; which
// of them, if any, is charged with the death is crashOutcomes's call.
func (m *Monitor) childDied(c *child, err error) {
	m.mu.Lock()
	var conns []*mconn
	for _, conn := range c.conns {
		conns = append(conns, conn)
	}
	wasEnding, closing := c.ending, m.closing
	c.ending = true
	if c.role == ipc.RolePostauth && m.post[c.key] == c {
		delete(m.post, c.key)
	}
	installed := c.role == ipc.RolePreauth && c.slot < len(m.workers) && m.workers[c.slot] == c
	m.mu.Unlock()
	if !wasEnding {
		m.log.Error("monitor: child process ended unexpectedly", "proc", c.name, "err", err, "connections", len(conns))
	}
	outs := m.crashOutcomes(c, err, wasEnding, conns)
	c.busy.Close()
	for _, conn := range conns {
		m.finish(conn, outs[conn], err)
	}
	if installed && !closing {
		// A worker that ran is started again at once; one that dies
		// as soon as it is up waits, so that a crash loop does not spin.
		wait := time.Duration(0)
		if time.Since(time.Unix(0, c.readyAt.Load())) < respawnBackoff {
			wait = respawnBackoff
		}
		go m.respawn(c.slot, wait)
	}
}

// respawn starts worker slot again after wait, and again after a pause
// each time it cannot start. Connections waiting for a worker go to the
// new one.
func (m *Monitor) respawn(slot int, wait time.Duration) {
	for {
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-m.ctx.Done():
				return
			}
		}
		if m.ctx.Err() != nil {
			return
		}
		w, err := m.startWorker(slot)
		if err == nil {
			m.installWorker(slot, w)
			return
		}
		if errors.Is(err, ErrClosed) {
			return
		}
		m.log.Error("monitor: restarting a pre-auth worker failed", "slot", slot, "err", err)
		wait = respawnBackoff
	}
}

// installWorker makes w the worker of slot and gives it the connections
// waiting for one.
func (m *Monitor) installWorker(slot int, w *child) {
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		go w.end("shutting down")
		return
	}
	m.workers[slot] = w
	waiting := m.waiting
	m.waiting = nil
	m.mu.Unlock()
	for _, c := range waiting {
		m.dispatch(c)
	}
}

// startWorker starts pre-auth worker slot.
func (m *Monitor) startWorker(slot int) (*child, error) {
	w := newChild(m, ipc.RolePreauth, "offload-sshd: pre-auth worker "+strconv.Itoa(slot+1))
	w.slot = slot
	cfg := &ipc.ChildConfig{Plan: m.cfg.Plan.Marshal(), LogLevel: m.cfg.LogLevel,
		LoginGraceTime: m.cfg.LoginGraceTime, MaxRequests: m.cfg.MaxRequests, Metrics: m.cfg.Metrics != nil,
		Identity: m.wid}
	return w, w.launch(cfg, nil)
}

// workerCredential is the identity of the pre-auth workers: an
// unprivileged account when the monitor is root, the monitor's own
// otherwise.
func workerIdentity(name string, root bool) (*ipc.Identity, error) {
	if !root {
		return nil, nil
	}
	u, err := lookupWorkerUser(name)
	if err != nil {
		return nil, err
	}
	return identityOf(u, false)
}

func lookupWorkerUser(name string) (*user.User, error) {
	if name != "" {
		u, err := user.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("monitor: pre-auth user: %w", err)
		}
		return u, nil
	}
	for _, n := range []string{"sshd", "nobody"} {
		if u, err := user.Lookup(n); err == nil {
			return u, nil
		}
	}
	return nil, errors.New(`monitor: no pre-auth user: neither "sshd" nor "nobody" exists`)
}

// identityOf returns u's uid and gid, and with groups its supplementary
// groups (none otherwise). Root (uid 0) is refused for workers.
func identityOf(u *user.User, groups bool) (*ipc.Identity, error) {
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("monitor: account %s: %w", u.Username, err)
	}
	if !groups && uid == 0 {
		return nil, fmt.Errorf("monitor: pre-auth user %s is root", u.Username)
	}
	cred := &ipc.Identity{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	if groups {
		ids, err := u.GroupIds()
		if err != nil {
			return nil, fmt.Errorf("monitor: groups of %s: %w", u.Username, err)
		}
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(n))
			}
		}
	}
	return cred, nil
}

func (m *Monitor) workerUserName() string {
	if m.wid == nil {
		return strconv.Itoa(os.Geteuid()) + " (the server's own)"
	}
	return strconv.Itoa(int(m.wid.Uid))
}

// forker starts child processes from one OS thread that never exits. A
// child's Pdeathsig fires when the thread that forked it ends, not the
// process (golang/go#27505), and threads do end here: sandbox.OpenAs
// retires the thread it changed the file-system identity of. Without
// this, a pre-auth worker forked on a thread later used by OpenAs was
// killed when that open finished (TestSshdInetd failed 3 in 6 runs under
// load, 0 in 6 with it).
var forker struct {
	once sync.Once
	ch   chan func()
}

// startChild starts cmd on the forker thread (for children with a
// Pdeathsig).
func startChild(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.ch = make(chan func())
		go func() {
			runtime.LockOSThread() // for the life of the process
			for f := range forker.ch {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	forker.ch <- func() { done <- cmd.Start() }
	return <-done
}
