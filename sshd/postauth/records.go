package postauth

import (
	"context"
	"time"

	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/ipc"
)

// recorder is the connection layer's SessionRecorder in a post-auth
// process: utmp, wtmp and lastlog are root's, so the monitor writes them.
type recorder struct {
	peer *ipc.Peer
	id   uint64
}

var _ connection.SessionRecorder = (*recorder)(nil)

// recordTimeout bounds a request for login records.
const recordTimeout = 10 * time.Second

func (r *recorder) Login(lr connection.LoginRecord) (connection.LastLogin, error) {
	b, err := r.call(lr, false)
	if err != nil {
		return connection.LastLogin{}, err
	}
	last, err := ipc.ParseLastLogin(b)
	if err != nil || last.Unix == 0 {
		return connection.LastLogin{}, err
	}
	return connection.LastLogin{Time: time.Unix(last.Unix, 0), Host: last.Host, TTY: last.TTY}, nil
}

func (r *recorder) Logout(lr connection.LoginRecord) error {
	_, err := r.call(lr, true)
	return err
}

func (r *recorder) call(lr connection.LoginRecord, logout bool) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	req := &ipc.LoginRecordRequest{ConnID: r.id, Logout: logout, TTY: lr.TTY, PID: int32(lr.PID)}
	return r.peer.Call(ctx, ipc.TypeLoginRecord, req.Marshal())
}
