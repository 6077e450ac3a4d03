package inproc

import (
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/loginrec"
	"github.com/offload/offload/sshd/transport"
)

// FileRecorder writes pty sessions' login records to utmp, wtmp and
// lastlog from this process (the in-process mode; the separated mode's
// monitor writes them for its post-auth processes). The zero value
// writes the system's files.
type FileRecorder struct{ Files loginrec.Files }

var _ connection.SessionRecorder = FileRecorder{}

// The transport marks its packets for the connection layer's IPQoS.
var _ connection.TOSSetter = (*transport.Conn)(nil)

// Login writes lr's login records and returns the user's last login
// before it.
func (f FileRecorder) Login(lr connection.LoginRecord) (connection.LastLogin, error) {
	last, err := f.Files.Login(record(lr))
	if err != nil || last.Time.IsZero() {
		return connection.LastLogin{}, err
	}
	return connection.LastLogin{Time: last.Time, Host: last.Host, TTY: last.Line}, nil
}

// Logout writes lr's logout records.
func (f FileRecorder) Logout(lr connection.LoginRecord) error { return f.Files.Logout(record(lr)) }

func record(lr connection.LoginRecord) loginrec.Record {
	addr := addrPort(lr.Remote).Addr()
	host := lr.Host
	if host == "" && addr.IsValid() {
		host = addr.String()
	}
	return loginrec.Record{User: lr.User, UID: lr.UID, PID: lr.PID, TTY: lr.TTY, Host: host, Addr: addr, Time: lr.Time}
}
