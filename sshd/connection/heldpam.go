package connection

import (
	"io/fs"
	"os/exec"
	"sync"
)

// HeldPAMSession is a session that a connection's programs must run in
// but this process must not hold: the PAM session of a server without
// privilege separation, whose modules change the calling process (limits,
// audit login uid, cgroup, keyring). A helper holds it and starts the
// programs (Start), so that they inherit it.
type HeldPAMSession struct {
	// Env are NAME=value pairs for every program (pam_getenvlist),
	// before Config.SetEnv.
	Env []string
	// Umask is the session's file-creation mask (pam_umask), used when
	// Config.Umask is nil; nil for none.
	Umask *fs.FileMode
	// Messages are printed at interactive logins when
	// Config.LoginMessages is empty (pam_motd).
	Messages string
	// Start starts c (its SysProcAttr set, its standard streams
	// *os.File) with umask, in the session, and sets c.Process so that
	// c.Wait reaps it.
	Start func(c *exec.Cmd, umask fs.FileMode) error
	// Close ends the session; it is called once the connection's
	// programs have been reaped.
	Close func()
}

// procSession is a connection's HeldPAMSession, opened on first use.
type procSession struct {
	once sync.Once
	ps   *HeldPAMSession
	err  error
}

// processSession opens the connection's HeldPAMSession the first time
// (nil without Config.OpenHeldPAMSession) and returns it.
func (m *mux) processSession() (*HeldPAMSession, error) {
	if m.cfg.OpenHeldPAMSession == nil {
		return nil, nil
	}
	m.procs.once.Do(func() { m.procs.ps, m.procs.err = m.cfg.OpenHeldPAMSession(m.perm.User) })
	return m.procs.ps, m.procs.err
}

// closeHeldPAMSession closes the session if one was opened.
func (m *mux) closeHeldPAMSession() {
	m.procs.once.Do(func() {}) // none may open after this
	if ps := m.procs.ps; ps != nil && ps.Close != nil {
		ps.Close()
	}
}

// umask is the file-creation mask of session programs and internal-sftp:
// Config.Umask, else the session's, else login.defs'.
func (m *mux) umask() fs.FileMode {
	if m.cfg.Umask == nil {
		if ps, _ := m.processSession(); ps != nil && ps.Umask != nil {
			return *ps.Umask & 0o777
		}
	}
	return m.cfg.umask
}

// loginMessages are Config.LoginMessages, else the session's.
func (m *mux) loginMessages() string {
	if m.cfg.LoginMessages == "" {
		if ps, _ := m.processSession(); ps != nil {
			return ps.Messages
		}
	}
	return m.cfg.LoginMessages
}

// sessionEnv is the session's environment (nil without one).
func (m *mux) sessionEnv() []string {
	if ps, _ := m.processSession(); ps != nil {
		return ps.Env
	}
	return nil
}
