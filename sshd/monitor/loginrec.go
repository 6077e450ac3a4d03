package monitor

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"syscall"

	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/loginrec"
)

// LoginRecorder writes the login records of pty sessions
// (loginrec.Files does, to utmp, wtmp and lastlog).
type LoginRecorder interface {
	Login(r loginrec.Record) (loginrec.Last, error)
	Logout(r loginrec.Record) error
}

var (
	errNoRecords = errors.New("monitor: no login records are kept")
	errBadTTY    = errors.New("monitor: not a pty of the user")
	errNoLogin   = errors.New("monitor: no login recorded on that terminal")
	ptsName      = regexp.MustCompile(`^/dev/pts/[0-9]{1,6}$`)
)

// loginRecord writes (or closes) the login records of a pty session of a
// post-auth process's connection. The user and the client's address are
// the monitor's own; the terminal must be a pty the user owns.
func (m *Monitor) loginRecord(in *call) ([]byte, error) {
	req, err := ipc.ParseLoginRecordRequest(in.p)
	if err != nil {
		return nil, err
	}
	if m.cfg.LoginRecords == nil {
		return nil, errNoRecords
	}
	conn := in.conn
	if req.Logout {
		// The login's record, checked then: by now the session's pty
		// may be gone (its device node goes with the last descriptor).
		return nil, m.logout(conn, req.TTY)
	}
	rec, err := m.recordFor(in.c, conn, req)
	if err != nil {
		return nil, err
	}
	return m.login(conn, rec)
}

// recordFor checks the request's terminal and builds the record.
func (m *Monitor) recordFor(c *child, conn *mconn, req *ipc.LoginRecordRequest) (loginrec.Record, error) {
	uid := uint32(os.Geteuid())
	if c.identity != nil {
		uid = c.identity.Uid
	}
	if !ptsName.MatchString(req.TTY) || req.PID <= 0 {
		return loginrec.Record{}, errBadTTY
	}
	var st syscall.Stat_t
	if err := syscall.Stat(req.TTY, &st); err != nil || st.Uid != uid || st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		return loginrec.Record{}, errBadTTY
	}
	addr := addrOf(conn.remote)
	return loginrec.Record{User: conn.user, UID: uid, PID: int(req.PID), TTY: req.TTY, Host: addr.String(), Addr: addr}, nil
}

func (m *Monitor) login(conn *mconn, rec loginrec.Record) ([]byte, error) {
	last, err := m.cfg.LoginRecords.Login(rec)
	if err != nil {
		m.log.Warn("monitor: login records", "conn", conn.id, "tty", rec.TTY, "err", err)
	}
	m.mu.Lock()
	if conn.ttys == nil {
		conn.ttys = map[string]loginrec.Record{}
	}
	conn.ttys[rec.TTY] = rec
	m.mu.Unlock()
	out := &ipc.LastLogin{Host: last.Host, TTY: last.Line}
	if !last.Time.IsZero() {
		out.Unix = last.Time.Unix()
	}
	return out.Marshal(), nil
}

func (m *Monitor) logout(conn *mconn, tty string) error {
	m.mu.Lock()
	rec, ok := conn.ttys[tty]
	delete(conn.ttys, tty)
	m.mu.Unlock()
	if !ok {
		return errNoLogin
	}
	return m.cfg.LoginRecords.Logout(rec)
}

// logoutAll closes the records of the sessions a connection still had
// when it ended (its post-auth process may have died).
func (m *Monitor) logoutAll(conn *mconn) {
	m.mu.Lock()
	ttys := conn.ttys
	conn.ttys = nil
	m.mu.Unlock()
	for _, rec := range ttys {
		if err := m.cfg.LoginRecords.Logout(rec); err != nil {
			m.log.Warn("monitor: login records", "conn", conn.id, "tty", rec.TTY, "err", fmt.Sprint(err))
		}
	}
}
