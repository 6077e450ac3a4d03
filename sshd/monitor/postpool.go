package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/pam"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/plan"
)

// postEnv is the whole environment of a post-auth process: nothing of the
// monitor's (which may hold a PIN) reaches it; sessions build their own.
var postEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

// adopt gives conn to its post-auth process, starting one if needed.
func (m *Monitor) adopt(conn *mconn, state []byte) error {
	perms, err := permsBinary(conn.perms)
	if err != nil {
		return err
	}
	settings, err := settingsBinary(conn.settings)
	if err != nil {
		return err
	}
	p, err := m.postFor(conn)
	if err != nil {
		return err
	}
	level := connLogLevel(conn.settings, m.cfg.LogLevel)
	msg := &ipc.Adopt{ConnID: conn.id, Local: conn.local.String(), Remote: conn.remote.String(),
		Perms: perms, Settings: settings, State: state, LogLevel: int8(level)}
	p.lowerLogFloor(level)
	// conn is p's before p can hear of it: a client that hangs up at
	// once makes p report the end straight away, which must find conn
	// p's and not be dropped as a stranger's (p would never go idle).
	f, err := m.handedOver(conn, p)
	if err != nil {
		m.mu.Lock()
		delete(p.conns, conn.id)
		m.mu.Unlock()
		m.maybeIdle(p)
		return err
	}
	err = p.peer.Notify(ipc.TypeAdopt, msg.Marshal(), f)
	f.Close()
	if err != nil {
		return err
	}
	go m.closeLogin(conn) // authentication is over; its transaction ends
	return nil
}

// connLogLevel is the lowest level the connection's logger passes (a
// LogLevel in a Match block may make it lower or higher than the
// server's), or def without one.
func connLogLevel(c *connection.Config, def slog.Level) slog.Level {
	if c == nil || c.Logger == nil {
		return def
	}
	for lv := slog.LevelDebug - 4; lv <= slog.LevelError+4; lv++ {
		if c.Logger.Enabled(context.Background(), lv) {
			return lv
		}
	}
	return slog.LevelError + 8
}

// permsBinary encodes the login's permissions for the post-auth process.
func permsBinary(p *perm.Permissions) ([]byte, error) {
	if p == nil {
		p = &perm.Permissions{}
	}
	b, err := p.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("monitor: permissions: %w", err)
	}
	return b, nil
}

// settingsBinary encodes the connection settings for the post-auth
// process; the logger stays here (the process logs through the monitor).
func settingsBinary(c *connection.Config) ([]byte, error) {
	var s connection.Config
	if c != nil {
		s = *c
	}
	s.Logger = nil
	s.ChrootDirectory = "" // the post-auth process itself is confined there
	b, err := s.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("monitor: connection settings: %w", err)
	}
	return b, nil
}

// handedOver moves conn to post-auth process p and returns the monitor's
// copy of the socket, for p, which the caller closes: the worker's part is
// over.
func (m *Monitor) handedOver(conn *mconn, p *child) (*os.File, error) {
	m.mu.Lock()
	if conn.phase == phaseDone {
		m.mu.Unlock()
		return nil, errConnEnded
	}
	if old := conn.owner; old != nil {
		delete(old.conns, conn.id)
	}
	conn.owner, conn.phase = p, phaseHanded
	conn.busy = nil // the hand-over is done: p may ask for it at once
	f := conn.file
	conn.file = nil
	m.mu.Unlock()
	if conn.grace != nil {
		conn.grace.Stop()
	}
	conn.preauthEnd()
	return f, nil
}

// postFor returns the running post-auth process for conn's user, or
// starts one, with conn counted as its connection (so that it does not
// end idle meanwhile).
func (m *Monitor) postFor(conn *mconn) (*child, error) {
	key := conn.user
	ps := m.pamSession(conn)
	if ps != nil {
		key += "\x00pam:" + ps.Service // a session per PAM service
	}
	chroot := ""
	if conn.settings != nil {
		chroot = conn.settings.ChrootDirectory
	}
	if chroot != "" {
		key += "\x00chroot:" + chroot // a process per confinement
	}
	if m.cfg.PerConnection {
		key = "conn-" + strconv.FormatUint(conn.id, 10)
	}
	m.mu.Lock()
	p := m.post[key]
	fresh := p == nil || p.ending
	if fresh {
		p = newChild(m, ipc.RolePostauth, "offload-sshd: "+conn.user)
		p.key, p.user, p.chroot = key, conn.user, chroot
		if ps != nil { // started by a session keeper, still the post-auth process for the monitor
			p.keeper = &ipc.ChildConfig{User: conn.user, LogLevel: m.cfg.LogLevel, PAM: ps}
		}
		m.post[key] = p
	}
	p.conns[conn.id] = conn
	if p.idle != nil {
		p.idle.Stop()
	}
	m.mu.Unlock()
	if fresh {
		go m.launchPost(p)
	}
	<-p.started
	if p.startErr != nil {
		m.mu.Lock()
		delete(p.conns, conn.id)
		m.mu.Unlock()
		return nil, p.startErr
	}
	return p, nil
}

func (m *Monitor) launchPost(p *child) {
	id, err := m.postIdentity(p.user)
	if err != nil {
		p.startErr = err
		close(p.started)
		m.dropPost(p)
		return
	}
	pl := m.postPlan()
	p.aeads.Remote = pl.Remote() // before the process can ask
	cfg := &ipc.ChildConfig{Plan: pl.Marshal(), LogLevel: m.cfg.LogLevel, User: p.user,
		Metrics: m.cfg.Metrics != nil, Identity: id, LoginRecords: m.cfg.LoginRecords != nil, Chroot: p.chroot}
	if err := p.launch(cfg, postEnv); err != nil {
		m.log.Error("monitor: cannot start the post-auth process", "user", p.user, "err", err)
		m.dropPost(p)
	}
}

// postPlan is the plan of a post-auth process started now: its
// assignments follow the registry as it is now (plan.Resolve), so that a
// token that attached after the monitor started (it was absent, or
// failing) serves the processes started since; the rest is the
// monitor's plan.
func (m *Monitor) postPlan() plan.Plan {
	pl := m.cfg.Plan
	if m.cfg.Registry != nil {
		pl.Postauth = plan.Resolve(m.cfg.Registry).Postauth
	}
	return pl
}

func (m *Monitor) dropPost(p *child) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p.ending = true
	if m.post[p.key] == p {
		delete(m.post, p.key)
	}
}

// PAMSessioner is a Login whose user's processes run in a PAM session
// (UsePAM): PAMSession selects it, nil for none.
type PAMSessioner interface {
	PAMSession() *pam.Config
}

// pamSession is the PAM session conn's post-auth process needs, if any.
// Only a root monitor opens one.
func (m *Monitor) pamSession(conn *mconn) *ipc.PAMSession {
	conn.lmu.Lock()
	ps, ok := conn.login.(PAMSessioner)
	conn.lmu.Unlock()
	if !ok || !m.root {
		return nil
	}
	cfg := ps.PAMSession()
	if cfg == nil {
		return nil
	}
	return &ipc.PAMSession{Service: cfg.Service, ConfDir: cfg.ConfDir, RemoteHost: addrOf(conn.remote).String()}
}

// postIdentity is the identity of user's post-auth process: the user's
// uid, gid and groups when the monitor is root, its own otherwise (it then
// serves only its own user).
func (m *Monitor) postIdentity(name string) (*ipc.Identity, error) {
	if !m.root {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("monitor: post-auth user: %w", err)
	}
	return identityOf(u, true)
}

// maybeIdle starts the linger of a post-auth process left with no
// connection; when it runs out, the process is told to end and the next
// login of its user starts a new one.
func (m *Monitor) maybeIdle(p *child) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(p.conns) > 0 || p.ending {
		return
	}
	if p.idle != nil {
		p.idle.Stop()
	}
	linger := max(m.linger, 0)
	if m.cfg.PerConnection {
		linger = 0 // its key names one connection: no other will come
	}
	p.idle = time.AfterFunc(linger, func() { m.idleExpired(p) })
}

func (m *Monitor) idleExpired(p *child) {
	m.mu.Lock()
	if len(p.conns) > 0 || p.ending || m.post[p.key] != p {
		m.mu.Unlock()
		return
	}
	delete(m.post, p.key)
	m.mu.Unlock()
	p.end("idle")
}
