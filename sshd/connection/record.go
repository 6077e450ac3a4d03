package connection

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SessionRecorder writes the login records of pty sessions (utmp, wtmp,
// lastlog, or their successors). The connection layer runs as the user
// and cannot write them itself; the daemon's implementation asks the
// privileged monitor, which checks the record against the session it
// started. Both methods may be called from several goroutines.
type SessionRecorder interface {
	// Login records a session that started on a pty and returns the
	// previous login of the user, read before this one was recorded, for
	// PrintLastLog (the zero LastLogin when there was none or it is not
	// known).
	Login(r LoginRecord) (LastLogin, error)
	// Logout records the end of the session Login recorded.
	Logout(r LoginRecord) error
}

// LoginRecord describes a pty session for the login records.
type LoginRecord struct {
	User string
	UID  uint32
	// TTY is the terminal's path ("/dev/pts/3").
	TTY string
	// PID is the session leader's process id.
	PID int
	// Host is the client's address as utmp's ut_host shows it (the IP
	// address: offload does not resolve names, as UseDNS no).
	Host string
	// Remote is the client's address and port.
	Remote net.Addr
	Time   time.Time
}

// LastLogin is the previous login of a user.
type LastLogin struct {
	Time time.Time // zero: none
	Host string
	TTY  string
}

// maxMotd bounds /etc/motd as printed.
const maxMotd = 64 << 10

// motdPath is the message of the day (a variable for tests).
var motdPath = "/etc/motd"

// loginMessages is what an interactive login prints before the shell
// runs, as OpenSSH's do_login: Config.LoginMessages (PAM's), the last
// login, then /etc/motd, unless
// ~/.hushlogin exists; newlines become CRLF, as the terminal would show
// them.
func (s *session) loginMessages(a *account, last LastLogin) []byte {
	if userFileExists(filepath.Join(a.home, ".hushlogin")) {
		return nil
	}
	var b bytes.Buffer
	b.Write(crlf([]byte(s.m.loginMessages())))
	if !s.m.cfg.NoLastLog && !last.Time.IsZero() {
		b.WriteString("Last login: " + last.Time.Local().Format("Mon Jan _2 15:04:05 2006"))
		if last.Host != "" {
			b.WriteString(" from " + last.Host)
		}
		b.WriteString("\r\n")
	}
	if !s.m.cfg.NoMotd {
		if f, err := os.Open(motdPath); err == nil {
			motd, _ := io.ReadAll(io.LimitReader(f, maxMotd))
			f.Close()
			b.Write(crlf(motd))
		}
	}
	return b.Bytes()
}

// crlf ends the lines of text with CRLF, as a terminal shows them.
func crlf(text []byte) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(text, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

// recordLogin writes the login record of a pty session that started,
// returning the record for its logout and the previous login.
func (s *session) recordLogin(a *account, pid int) (*LoginRecord, LastLogin) {
	rec := s.m.cfg.Sessions
	if rec == nil {
		return nil, LastLogin{}
	}
	host, _ := hostPort(s.m.addrs.Remote)
	r := &LoginRecord{User: a.name, UID: a.uid, TTY: s.pty.name, PID: pid, Host: host,
		Remote: s.m.addrs.Remote, Time: time.Now()}
	last, err := rec.Login(*r)
	if err != nil {
		s.m.log.Warn("connection: login record not written", "tty", r.TTY, "err", err)
	}
	return r, last
}

// recordLogout writes the logout of a recorded session.
func (s *session) recordLogout(r *LoginRecord) {
	if r == nil {
		return
	}
	if err := s.m.cfg.Sessions.Logout(*r); err != nil {
		s.m.log.Warn("connection: logout record not written", "tty", r.TTY, "err", err)
	}
}
