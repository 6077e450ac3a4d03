package postauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/pam"
)

// The in-process server's side of a PAM keeper. The session modules
// change the process that opens the session (pam_limits its limits,
// pam_loginuid its audit login uid, pam_systemd its cgroup), which must
// not be the server's. So, as in the separated mode, a root keeper (the
// program re-executed with RunChild's session role, PAMKeeperMain) opens
// the session, once per connection before its first program; it then
// starts each of the connection's programs as the server's child
// (spawn.go), and closes the session when the connection ends.

// keeperWait bounds the keeper's start, each program start, and its end
// (each PAM call in it has its own keeperTimeout).
const keeperWait = 40 * time.Second

// pamKeeper is the server's side of a connection's PAM keeper.
type pamKeeper struct {
	cmd    *exec.Cmd
	peer   *ipc.Peer
	log    *slog.Logger
	name   string
	opened chan *ipc.PAMSessionOpened
}

// OpenPAMKeeper starts the PAM keeper of an in-process server's
// connection of user from rhost, and waits until it has opened the PAM
// session; the connection layer runs the connection's programs in it.
// The server must be root, and its program must call sshd.RunChild.
func OpenPAMKeeper(pc pam.Config, user, rhost string, log *slog.Logger) (*connection.HeldPAMSession, error) {
	parent, sock, err := ipc.Pair()
	if err != nil {
		return nil, fmt.Errorf("post-auth: PAM keeper: %w", err)
	}
	defer sock.Close()
	k := &pamKeeper{log: log, name: "offload-sshd: " + user + " [session]", opened: make(chan *ipc.PAMSessionOpened, 1)}
	k.cmd = &exec.Cmd{Path: "/proc/self/exe", Args: []string{k.name}, Dir: "/", ExtraFiles: []*os.File{sock},
		Env: []string{ipc.RoleEnv + "=" + ipc.RolePAMKeeper}, Stderr: os.Stderr, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := k.cmd.Start(); err != nil {
		parent.Close()
		return nil, fmt.Errorf("post-auth: PAM keeper: starting the keeper: %w", err)
	}
	if k.peer, err = ipc.NewPeer(parent, k.handle); err != nil {
		k.cmd.Process.Kill()
		k.cmd.Wait()
		return nil, fmt.Errorf("post-auth: PAM keeper: %w", err)
	}
	go k.peer.Run()
	cfg := &ipc.ChildConfig{User: user, PAM: &ipc.PAMSession{Service: pc.Service, ConfDir: pc.ConfDir, RemoteHost: rhost, Spawn: true}}
	if pc.Service == "" {
		cfg.PAM.Service = pam.DefaultService
	}
	o, err := k.waitOpened(cfg)
	if err != nil {
		k.close()
		return nil, err
	}
	return k.session(o), nil
}

// waitOpened sends the keeper its settings and waits for its
// PAMSessionOpened.
func (k *pamKeeper) waitOpened(cfg *ipc.ChildConfig) (*ipc.PAMSessionOpened, error) {
	b, err := cfg.Marshal()
	if err == nil {
		err = k.peer.Notify(ipc.TypeConfig, b)
	}
	if err != nil {
		return nil, fmt.Errorf("post-auth: PAM keeper: %w", err)
	}
	t := time.NewTimer(keeperWait)
	defer t.Stop()
	select {
	case o := <-k.opened:
		return o, nil
	case <-k.peer.Done():
		return nil, errors.New("post-auth: PAM keeper: not opened (the keeper ended; see its log line)")
	case <-t.C:
		return nil, fmt.Errorf("post-auth: PAM keeper: not opened within %v", keeperWait)
	}
}

// handle relays the keeper's log lines and takes its PAMSessionOpened.
func (k *pamKeeper) handle(m *ipc.Message) {
	for _, f := range m.Files {
		f.Close()
	}
	switch m.Type {
	case ipc.TypeLog:
		if l, err := ipc.ParseLog(m.Payload); err == nil {
			ipc.Relay(k.log, k.name, l)
		}
	case ipc.TypePAMSessionOpened:
		o, err := ipc.ParsePAMSessionOpened(m.Payload)
		if err != nil {
			k.log.Warn("post-auth: PAM keeper: bad message", "err", err)
			k.peer.Close()
			return
		}
		select {
		case k.opened <- o:
		default: // a second one: ignored
		}
	}
}

// session is the connection layer's view of the open session.
func (k *pamKeeper) session(o *ipc.PAMSessionOpened) *connection.HeldPAMSession {
	ps := &connection.HeldPAMSession{Env: o.Env, Messages: o.Messages, Start: k.start, Close: k.close}
	if o.Umask >= 0 {
		m := fs.FileMode(o.Umask)
		ps.Umask = &m
	}
	return ps
}

// start has the keeper start c, as this process's child.
func (k *pamKeeper) start(c *exec.Cmd, umask fs.FileMode) error {
	files, cleanup, err := streams(c)
	if err != nil {
		return fmt.Errorf("post-auth: PAM keeper: %w", err)
	}
	defer cleanup()
	sp := spawnOf(c, umask)
	payload, err := sp.Marshal()
	if err != nil {
		return fmt.Errorf("post-auth: PAM keeper: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), keeperWait)
	defer cancel()
	reply, err := k.peer.Call(ctx, ipc.TypeSpawn, payload, files...)
	if err != nil {
		return fmt.Errorf("post-auth: PAM keeper: starting %s: %w", c.Path, err)
	}
	r, err := ipc.ParseSpawnReply(reply)
	if err != nil {
		return fmt.Errorf("post-auth: PAM keeper: %w", err)
	}
	p, err := os.FindProcess(int(r.PID)) // our child: c.Wait reaps it
	if err != nil {
		return fmt.Errorf("post-auth: PAM keeper: %w", err)
	}
	c.Process = p
	return nil
}

// spawnOf is the keeper's request for c.
func spawnOf(c *exec.Cmd, umask fs.FileMode) *ipc.Spawn {
	sp := &ipc.Spawn{Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir, Umask: uint32(umask & 0o777),
		UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
	if a := c.SysProcAttr; a != nil {
		sp.Setsid, sp.Setctty, sp.Ctty, sp.Chroot = a.Setsid, a.Setctty, a.Ctty, a.Chroot
		if cr := a.Credential; cr != nil {
			sp.UID, sp.GID, sp.Groups = cr.Uid, cr.Gid, cr.Groups
		}
	}
	return sp
}

// streams are c's stdin, stdout and stderr as files (the connection
// layer gives files): a stdin reader that is not one is fed through a
// pipe; any other stream, or a missing one, is /dev/null.
func streams(c *exec.Cmd) ([]*os.File, func(), error) {
	var opened []*os.File
	cleanup := func() {
		for _, f := range opened {
			f.Close()
		}
	}
	file := func(v any, write bool) (*os.File, error) {
		if f, ok := v.(*os.File); ok && f != nil {
			return f, nil
		}
		if r, ok := v.(io.Reader); ok && r != nil && !write {
			pr, pw, err := os.Pipe()
			if err != nil {
				return nil, err
			}
			opened = append(opened, pr)
			go func() { io.Copy(pw, r); pw.Close() }()
			return pr, nil
		}
		f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err == nil {
			opened = append(opened, f)
		}
		return f, err
	}
	var files []*os.File
	for i, v := range []any{c.Stdin, c.Stdout, c.Stderr} {
		f, err := file(v, i > 0)
		if err != nil {
			cleanup()
			return nil, func() {}, err
		}
		files = append(files, f)
	}
	return files, cleanup, nil
}

// close tells the keeper the connection has ended (it closes the
// session) and waits for it.
func (k *pamKeeper) close() {
	k.peer.Close()
	done := make(chan struct{})
	go func() { k.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(keeperWait):
		k.log.Warn("post-auth: PAM keeper did not end; killing it", "proc", k.name)
		k.cmd.Process.Kill()
		<-done
	}
}
