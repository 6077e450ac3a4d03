package postauth

import (
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"syscall"

	"github.com/offload/offload/sshd/ipc"
)

// The keeper of an in-process server's connection (ipc.PAMSession.Spawn):
// the server runs the connection in its own process, so the session's
// programs cannot descend from a post-auth process. The keeper opens the
// PAM session, tells the server what it gave (ipc.PAMSessionOpened), then
// starts each program the server asks for with CLONE_PARENT: the program
// inherits the keeper's limits, audit login uid, cgroup and keyring, but
// is the server's child, which reaps it and sees its exit status as it
// would for a program it had started itself. When the server closes the
// socket (the connection ended), the keeper closes the session.

// maxPendingSpawns bounds the requests waiting for the main thread.
const maxPendingSpawns = 64

var errSpawnBusy = errors.New("post-auth: PAM keeper: too many programs starting at once")

// keepSpawning runs the in-process server's keeper until the server
// closes its socket.
func keepSpawning(child *ipc.Child, cfg *ipc.ChildConfig) int {
	logf := keeperLog(child, cfg)
	reqs := make(chan *ipc.Message, maxPendingSpawns)
	child.Serve(func(m *ipc.Message) {
		if m.Type != ipc.TypeSpawn {
			closeFiles(m.Files)
			return
		}
		select {
		case reqs <- m:
		default:
			closeFiles(m.Files)
			child.Peer.Reply(m, nil, errSpawnBusy)
		}
	})
	s, err := openPAM(cfg, logf)
	if err != nil {
		return 1
	}
	defer s.close(logf)
	if err := child.Peer.Notify(ipc.TypePAMSessionOpened, s.opened().Marshal()); err != nil {
		logf("PAM session: telling the server", err)
		return 1
	}
	for {
		select {
		case m := <-reqs: // on the main thread: what the session set on it reaches the program
			pid, err := spawn(m)
			closeFiles(m.Files)
			var reply []byte
			if err == nil {
				reply = (&ipc.SpawnReply{PID: int32(pid)}).Marshal()
			}
			child.Peer.Reply(m, reply, err)
		case <-child.Peer.Done():
			return 0
		}
	}
}

// opened is what the session gives the server.
func (s *pamSession) opened() *ipc.PAMSessionOpened {
	o := &ipc.PAMSessionOpened{Umask: int32(s.umask), Messages: s.texts}
	if env, err := s.h.Env(); err == nil {
		for k, v := range env {
			o.Env = append(o.Env, k+"="+v)
		}
		sort.Strings(o.Env)
	}
	return o
}

// spawn starts the program m asks for as the server's child and returns
// its process id.
func spawn(m *ipc.Message) (int, error) {
	sp, err := ipc.ParseSpawn(m.Payload)
	if err != nil {
		return 0, err
	}
	if len(m.Files) != 3 {
		return 0, fmt.Errorf("post-auth: PAM keeper: %d descriptors, want stdin, stdout and stderr", len(m.Files))
	}
	c := &exec.Cmd{Path: sp.Path, Args: sp.Args, Env: sp.Env, Dir: sp.Dir,
		Stdin: m.Files[0], Stdout: m.Files[1], Stderr: m.Files[2],
		SysProcAttr: &syscall.SysProcAttr{Setsid: sp.Setsid, Setctty: sp.Setctty, Ctty: sp.Ctty, Chroot: sp.Chroot,
			Credential: &syscall.Credential{Uid: sp.UID, Gid: sp.GID, Groups: sp.Groups},
			Cloneflags: syscall.CLONE_PARENT}}
	old := syscall.Umask(int(sp.Umask & 0o777))
	err = c.Start()
	syscall.Umask(old)
	if err != nil {
		return 0, err
	}
	pid := c.Process.Pid
	c.Process.Release() // the server's child: the server reaps it
	return pid, nil
}
