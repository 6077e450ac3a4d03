package monitor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/loginrec"
)

// Restarts keep sessions. A stopping monitor (Detach) ends its pre-auth
// connections and workers and hands what it does for its authenticated
// connections to a successor, the session keeper (Resume, in a process
// of its own): the post-auth processes' sockets, read from the keeper
// from the next message on, and a small state per connection (its user,
// session id, the host key of its first exchange, its open login
// records). The keeper signs re-exchanges, writes login records, relays
// log lines, and ends when the last post-auth process has gone. The PAM
// sessions are the post-auth processes' own root PAM keepers': they
// close them when their post-auth process ends, whoever the monitor is.

// handoverVersion is the version of handoverState; a keeper is the same
// binary as the monitor that started it (/proc/self/exe), so only that
// one is read.
const handoverVersion = 1

// drainTimeout bounds the wait for the requests a detached process made
// before the hand-over (a token signature) to be answered.
const drainTimeout = 10 * time.Second

// Handover is what a detached monitor gives its session keeper: State to
// pass as bytes, Files as descriptors (State names them by index).
type Handover struct {
	State []byte
	Files []*os.File
	Conns int // the connections handed over (for logs)
}

// Close closes the descriptors (once the keeper has them).
func (h *Handover) Close() {
	for _, f := range h.Files {
		f.Close()
	}
}

type handoverState struct {
	Version        int
	HostPublicKeys [][]byte // that the connections may re-exchange with
	Children       []childState
}

type childState struct {
	Name, Key, User string
	PID             int
	Identity        *ipc.Identity
	File            int // index of the process's socket in Handover.Files
	Session         int // index of its PAM keeper's socket, -1 for none
	Conns           []connState
}

type connState struct {
	ID            uint64
	Local, Remote string
	User          string
	SessionID     []byte
	HostKey       []byte
	TTYs          []loginrec.Record
	Start         time.Time
}

// Detach stops the monitor for a restart that keeps sessions: it admits
// nothing more, ends the connections still authenticating and the
// pre-auth workers, and detaches every post-auth process that serves a
// connection, for Resume in a keeper. A post-auth process whose packet
// cipher runs in this process (ProviderMap on a token) cannot be kept
// and is told to end its connections. The connections' done channels
// (Admit) are closed; Shutdown does nothing afterwards. It returns nil
// when there is nothing to keep.
func (m *Monitor) Detach() (*Handover, error) {
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	m.closing, m.handed = true, true
	pre := m.connsIn(phasePreauth)
	m.mu.Unlock()
	for _, c := range pre {
		m.finish(c, ipc.OutcomeClosed, ErrClosed)
	}
	m.awaitHandoffs() // logins already granted become sessions to keep
	m.mu.Lock()
	pre = m.connsIn(phaseAuthed)
	workers := append([]*child(nil), m.workers...)
	var post []*child
	for _, p := range m.post {
		post = append(post, p)
	}
	m.mu.Unlock()
	for _, c := range pre {
		m.finish(c, ipc.OutcomeClosed, ErrClosed)
	}
	for _, w := range workers {
		w.end("server restarting")
	}
	for _, w := range workers {
		if w.cmd != nil && w.cmd.Process != nil { // started: reap closes exited
			<-w.exited
		}
	}
	st := &handoverState{Version: handoverVersion}
	for _, k := range m.cfg.HostPublicKeys {
		st.HostPublicKeys = append(st.HostPublicKeys, k.Marshal())
	}
	h := &Handover{}
	for _, p := range post {
		cs, files := m.detachPost(p)
		if cs != nil {
			cs.File = len(h.Files)
			if len(files) > 1 {
				cs.Session = len(h.Files) + 1
			}
			h.Files = append(h.Files, files...)
			h.Conns += len(cs.Conns)
			st.Children = append(st.Children, *cs)
		}
	}
	m.cancel()
	if len(st.Children) == 0 {
		return nil, nil
	}
	var err error
	if h.State, err = st.marshal(); err != nil {
		h.Close()
		return nil, fmt.Errorf("monitor: hand-over: %w", err)
	}
	return h, nil
}

// awaitHandoffs waits (bounded) until no connection is between its
// login and its hand-over, and the workers' requests (a hand-over's
// among them) have been answered: a connection handed over is then its
// post-auth process's, which the keeper will hear from.
func (m *Monitor) awaitHandoffs() {
	deadline := time.Now().Add(drainTimeout)
	for time.Now().Before(deadline) && m.handoffsPending() {
		time.Sleep(5 * time.Millisecond)
	}
}

func (m *Monitor) handoffsPending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.connsIn(phaseAuthed)) > 0 {
		return true
	}
	for _, w := range m.workers {
		if len(w.sem) > 0 {
			return true
		}
	}
	return false
}

// detachPost detaches post-auth process p, or tells it to end when it
// cannot be kept (no connection, or AEADs held here). It returns p's state
// and its sockets: its own, then its PAM keeper's if it has one.
func (m *Monitor) detachPost(p *child) (*childState, []*os.File) {
	<-p.started
	m.mu.Lock()
	if p.idle != nil {
		p.idle.Stop()
	}
	keep := p.startErr == nil && !p.ending && len(p.conns) > 0 && p.aeads.held() == 0
	m.mu.Unlock()
	if !keep {
		p.end("server restarting")
		return nil, nil
	}
	f, err := p.peer.Detach()
	if err != nil {
		m.log.Error("monitor: cannot hand a post-auth process over; ending its connections", "proc", p.name, "err", err)
		p.end("server restarting")
		return nil, nil
	}
	files := []*os.File{f}
	cs := &childState{Name: p.name, Key: p.key, User: p.user, Identity: p.identity, Session: -1}
	if p.cmd != nil && p.cmd.Process != nil {
		cs.PID = p.cmd.Process.Pid
	}
	if p.session != nil {
		if sf, err := p.session.Detach(); err == nil {
			files = append(files, sf)
		}
	}
	p.drain()
	m.mu.Lock()
	p.ending = true
	if m.post[p.key] == p {
		delete(m.post, p.key)
	}
	var handed []*mconn
	for id, c := range p.conns {
		if c.phase == phaseHanded {
			cs.Conns = append(cs.Conns, connStateOf(c))
			c.phase = phaseDone
			handed = append(handed, c)
		}
		delete(p.conns, id)
		delete(m.conns, id)
	}
	m.mu.Unlock()
	for _, c := range handed {
		c.cancel()
		close(c.done)
	}
	p.peer.Close()
	if p.session != nil {
		p.session.Close()
	}
	return cs, files
}

// drain waits (bounded) for the requests p made before its detachment to
// be answered.
func (p *child) drain() {
	deadline := time.Now().Add(drainTimeout)
	for len(p.sem) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

func connStateOf(c *mconn) connState {
	s := connState{ID: c.id, Local: c.local.String(), Remote: c.remote.String(), User: c.user,
		SessionID: c.sessionID, HostKey: c.hostKey, Start: c.start}
	for _, r := range c.ttys {
		s.TTYs = append(s.TTYs, r)
	}
	return s
}

// refuseSigner is the host-key signer of a keeper that could open none.
type refuseSigner struct{}

func (refuseSigner) SignExchange(string, []byte, []byte) ([]byte, error) { return nil, errNoHostKey }

// held is the number of AEADs s holds.
func (s *AEADServer) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// errKeeper answers what a keeper cannot: it authenticates no one.
var errKeeper = errors.New("monitor: session keeper: no new logins")

// Resume makes a session keeper's monitor from a hand-over: cfg gives the
// host keys (opened again in this process), LoginRecords and Logger; the
// host keys the detached monitor had and cfg lacks cannot sign any more
// (a warning says which). The post-auth processes' requests are served
// from now on; Wait returns when the last of them has ended.
func Resume(cfg Config, h *Handover) (*Monitor, error) {
	st, err := parseHandoverState(h.State)
	if err != nil {
		return nil, err
	}
	cfg.NewLogin = func([]byte, []byte, net.Addr, net.Addr) (Login, error) { return nil, errKeeper }
	noKeys := cfg.HostKeys == nil || len(cfg.HostPublicKeys) == 0
	if noKeys { // a configuration that no longer opens: the sessions go on, re-exchanges fail
		cfg.HostKeys, cfg.HostPublicKeys = refuseSigner{}, nil
		for _, b := range st.HostPublicKeys {
			if k, err := ssh.ParsePublicKey(b); err == nil {
				cfg.HostPublicKeys = append(cfg.HostPublicKeys, k)
			}
		}
	}
	m, err := newMonitor(cfg)
	if err != nil {
		return nil, err
	}
	m.closing, m.linger = true, -1
	if noKeys {
		m.cfg.HostPublicKeys = nil
		m.log.Warn("monitor: session keeper: no host key opened; the sessions' key re-exchanges will fail")
	} else {
		m.cfg.HostPublicKeys = keptHostKeys(m, st.HostPublicKeys)
	}
	for i := range st.Children {
		if err := m.resumeChild(&st.Children[i], h.Files); err != nil {
			m.log.Error("monitor: session keeper: cannot take a post-auth process over", "proc", st.Children[i].Name, "err", err)
		}
	}
	return m, nil
}

// keptHostKeys is the host keys the keeper has that the detached monitor
// had too.
func keptHostKeys(m *Monitor, old [][]byte) []ssh.PublicKey {
	var out []ssh.PublicKey
	for _, o := range old {
		found := false
		for _, k := range m.cfg.HostPublicKeys {
			if bytes.Equal(k.Marshal(), o) {
				out, found = append(out, k), true
				break
			}
		}
		if !found {
			if k, err := ssh.ParsePublicKey(o); err == nil {
				m.log.Warn("monitor: session keeper: a host key of the stopped server is not in the configuration now; re-exchanges with it fail",
					"key", ssh.FingerprintSHA256(k))
			}
		}
	}
	return out
}

func (m *Monitor) resumeChild(cs *childState, files []*os.File) error {
	if cs.File < 0 || cs.File >= len(files) {
		return errors.New("no socket")
	}
	c := newChild(m, ipc.RolePostauth, cs.Name)
	c.key, c.user, c.identity, c.ending = cs.Key, cs.User, cs.Identity, false
	close(c.started)
	c.readyOnce.Do(func() { close(c.ready) })
	c.cmd = &exec.Cmd{}
	if cs.PID > 0 {
		c.cmd.Process, _ = os.FindProcess(cs.PID) // a pidfd where the kernel has them: for a kill, if it must
	}
	m.mu.Lock()
	for _, s := range cs.Conns {
		conn := resumedConn(s, c)
		c.conns[conn.id] = conn
		m.conns[conn.id] = conn
	}
	m.post[c.key] = c
	m.mu.Unlock()
	var err error
	if c.peer, err = ipc.NewPeer(files[cs.File], c.handle); err != nil {
		m.childDied(c, err)
		return err
	}
	if cs.Session >= 0 && cs.Session < len(files) {
		if sp, err := ipc.NewPeer(files[cs.Session], c.keeperMessage); err == nil {
			// Until the PAM session process has closed the session and
			// exited: the keeper relays what it logs about the close.
			m.kids.Add(1)
			go func() { defer m.kids.Done(); sp.Run() }()
		}
	}
	m.kids.Add(1)
	go c.peer.Run()
	go c.watch()
	m.maybeIdle(c) // one whose connections all ended meanwhile is told to go
	return nil
}

func resumedConn(s connState, owner *child) *mconn {
	c := &mconn{id: s.ID, local: addrString(s.Local), remote: addrString(s.Remote), owner: owner, phase: phaseHanded,
		sessionID: s.SessionID, hostKey: s.HostKey, user: s.User, start: s.Start, loginDone: true,
		done: make(chan struct{}), preauthEnd: func() {}}
	c.ctx, c.cancel = context.WithCancel(owner.m.ctx)
	for _, r := range s.TTYs {
		if c.ttys == nil {
			c.ttys = map[string]loginrec.Record{}
		}
		c.ttys[r.TTY] = r
	}
	return c
}

// addrString is an address the keeper knows by its text.
type addrString string

func (a addrString) Network() string { return "tcp" }
func (a addrString) String() string  { return string(a) }

// watch is reap for a process the keeper did not start (it cannot wait
// for it): the process has gone when its socket closes.
func (c *child) watch() {
	defer c.m.kids.Done()
	<-c.peer.Done()
	close(c.exited)
	c.m.childDied(c, c.peer.Err())
}

// Wait returns when every post-auth process a keeper took over, and its
// PAM session process, has ended.
func (m *Monitor) Wait() { m.kids.Wait() }

// EndSessions tells every post-auth process to close its connections and
// end (a keeper's SIGTERM).
func (m *Monitor) EndSessions(reason string) {
	m.mu.Lock()
	var post []*child
	for _, p := range m.post {
		post = append(post, p)
	}
	m.mu.Unlock()
	for _, p := range post {
		p.end(reason)
	}
}

// Sessions is the number of connections the monitor holds.
func (m *Monitor) Sessions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}
