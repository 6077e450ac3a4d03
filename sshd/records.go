package sshd

import (
	"os"

	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/loginrec"
	"github.com/offload/offload/sshd/transport"
)

// fileRecorder writes pty sessions' login records to utmp, wtmp and
// lastlog from this process (the in-process mode; the separated mode's
// monitor writes them for its post-auth processes).
type fileRecorder struct{ files loginrec.Files }

var _ connection.SessionRecorder = fileRecorder{}

// The transport marks its packets for the connection layer's IPQoS.
var _ connection.TOSSetter = (*transport.Conn)(nil)

func (f fileRecorder) Login(lr connection.LoginRecord) (connection.LastLogin, error) {
	last, err := f.files.Login(record(lr))
	if err != nil || last.Time.IsZero() {
		return connection.LastLogin{}, err
	}
	return connection.LastLogin{Time: last.Time, Host: last.Host, TTY: last.Line}, nil
}

func (f fileRecorder) Logout(lr connection.LoginRecord) error { return f.files.Logout(record(lr)) }

func record(lr connection.LoginRecord) loginrec.Record {
	addr := addrPort(lr.Remote).Addr()
	host := lr.Host
	if host == "" && addr.IsValid() {
		host = addr.String()
	}
	return loginrec.Record{User: lr.User, UID: lr.UID, PID: lr.PID, TTY: lr.TTY, Host: host, Addr: addr, Time: lr.Time}
}

// recordsOn reports whether login records are written: by a root server,
// unless Config.NoLoginRecords.
func (s *settings) recordsOn() bool { return !s.NoLoginRecords && os.Geteuid() == 0 }
