package connection

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/offload/offload/internal/rawio"
	"github.com/offload/offload/sshd/wire"
)

// Timing of process teardown.
const (
	killGrace    = time.Second     // SIGHUP → SIGKILL
	ptyDrainTime = 2 * time.Second // output still read after a pty child exits
	stdinBufSize = 32 << 10
)

// process is a running session program.
type process struct {
	cmd  *exec.Cmd
	pty  *os.File      // pty master, nil without a pty
	done chan struct{} // closed once the process is reaped and reported
}

// start runs cmd (login shell when empty) for the session.
func (s *session) start(req, cmd string, orig *string) error {
	a, err := s.m.account()
	if err != nil {
		return err
	}
	return s.startIn(req, func() *exec.Cmd { return s.command(a, cmd, orig) })
}

// startIn launches the command build makes in the user's home directory,
// or in / when that fails: the child's chdir runs with the user's
// identity and the home directory may be missing or closed to the user
// (root may not even see it: NFS with root squash). OpenSSH does the
// same.
func (s *session) startIn(req string, build func() *exec.Cmd) error {
	c := build()
	err := s.launch(req, c)
	if err != nil && c.Dir != "/" {
		s.m.log.Info("connection: cannot start in the home directory, using /", "home", c.Dir, "err", err)
		c = build()
		c.Dir = "/"
		err = s.launch(req, c)
	}
	return err
}

// launch starts c on a pty or on pipes and supervises it.
func (s *session) launch(req string, c *exec.Cmd) error {
	var p *process
	var err error
	if s.pty != nil {
		p, err = s.startPTY(c)
	} else {
		p, err = s.startPipes(c)
	}
	if err != nil {
		s.m.log.Warn("connection: cannot start session program", "request", req, "err", err)
		return refuse(req, "%v", err)
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// command builds the exec.Cmd for cmd run by the user's shell.
func (s *session) command(a *account, cmd string, orig *string) *exec.Cmd {
	c := &exec.Cmd{Path: a.shell, Args: []string{a.shell, "-c", cmd}}
	if cmd == "" {
		c.Args = []string{"-" + filepath.Base(a.shell)} // login shell
	}
	s.prepare(c, a, orig)
	return c
}

// prepare sets environment, directory and credentials.
func (s *session) prepare(c *exec.Cmd, a *account, orig *string) {
	c.Env = s.environ(a, orig)
	c.Dir = a.home // see startIn
	if a.home == "" || !filepath.IsAbs(a.home) {
		c.Dir = "/"
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: a.cred}
}

// environ assembles the child's environment: defaults, accepted client
// variables, authorized_keys environment=, then the SSH_* variables
// nobody may override.
func (s *session) environ(a *account, orig *string) []string {
	env := []string{
		"HOME=" + a.home, "USER=" + a.name, "LOGNAME=" + a.name, "SHELL=" + a.shell,
		"PATH=" + hostEnvPath(a.uid), "MAIL=/var/mail/" + a.name,
	}
	if s.pty != nil {
		env = append(env, "TERM="+s.pty.term)
	}
	env = append(env, s.env...)
	env = append(env, s.m.perm.Environment...)
	rh, rp := hostPort(s.m.addrs.Remote)
	lh, lp := hostPort(s.m.addrs.Local)
	env = append(env, "SSH_CONNECTION="+rh+" "+rp+" "+lh+" "+lp, "SSH_CLIENT="+rh+" "+rp+" "+lp)
	if s.pty != nil && s.pty.name != "" {
		env = append(env, "SSH_TTY="+s.pty.name)
	}
	if orig != nil {
		env = append(env, "SSH_ORIGINAL_COMMAND="+*orig)
	}
	return env
}

// startPipes runs c with stdin, stdout and stderr on pipes.
func (s *session) startPipes(c *exec.Cmd) (*process, error) {
	var fds [6]*os.File // stdin r,w; stdout r,w; stderr r,w
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(fds[:i]...)
			return nil, err
		}
		fds[i], fds[i+1] = r, w
	}
	c.Stdin, c.Stdout, c.Stderr = fds[0], fds[3], fds[5]
	err := c.Start()
	closeAll(fds[0], fds[3], fds[5])
	if err != nil {
		closeAll(fds[1], fds[2], fds[4])
		return nil, err
	}
	p := &process{cmd: c, done: make(chan struct{})}
	s.later(func() { s.pumpStdin(fds[1]) })
	s.later(func() { s.supervisePipes(p, fds[2], fds[4]) })
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// pumpStdin copies channel data to w until the peer's EOF, then closes
// w. If the program stops reading, further input is discarded so the
// peer's window keeps moving.
func (s *session) pumpStdin(w *os.File) {
	s.c.setSink(w)
	buf := make([]byte, stdinBufSize)
	_, err := io.CopyBuffer(writerOnly{w}, readerOnly{s.c}, buf)
	s.c.setSink(nil)
	w.Close()
	if err != nil {
		io.CopyBuffer(io.Discard, readerOnly{s.c}, buf)
	}
}

// readerOnly and writerOnly hide ReadFrom/WriteTo so CopyBuffer uses
// the given buffer.
type readerOnly struct{ io.Reader }
type writerOnly struct{ io.Writer }

// supervisePipes forwards stdout and stderr, waits for the process and
// reports its exit: output first, then exit-status, EOF and CLOSE.
func (s *session) supervisePipes(p *process, stdout, stderr *os.File) {
	defer close(p.done)
	outDone := make(chan struct{}, 2)
	go func() { s.c.stdout.ReadFrom(rawReader(stdout)); outDone <- struct{}{} }()
	go func() { s.c.stderr.ReadFrom(rawReader(stderr)); outDone <- struct{}{} }()
	exited := waitProcess(p.cmd)
	var st *os.ProcessState
	for n := 0; n < 2; {
		select {
		case <-outDone:
			n++
		case <-s.c.ctx.Done():
			st = terminate(p.cmd, exited)
			closeAll(stdout, stderr)
			for ; n < 2; n++ {
				<-outDone
			}
		}
	}
	closeAll(stdout, stderr)
	if st == nil {
		st = s.reap(p.cmd, exited)
	}
	s.finish(st)
}

// waitProcess waits for the process in the background.
func waitProcess(c *exec.Cmd) <-chan *os.ProcessState {
	ch := make(chan *os.ProcessState, 1)
	go func() {
		c.Wait()
		ch <- c.ProcessState
	}()
	return ch
}

// reap returns the exit state, killing the process when the channel
// dies first.
func (s *session) reap(c *exec.Cmd, exited <-chan *os.ProcessState) *os.ProcessState {
	select {
	case st := <-exited:
		return st
	case <-s.c.ctx.Done():
		return terminate(c, exited)
	}
}

// terminate sends SIGHUP to the process group, then SIGKILL, and reaps.
func terminate(c *exec.Cmd, exited <-chan *os.ProcessState) *os.ProcessState {
	pid := c.Process.Pid
	syscall.Kill(-pid, syscall.SIGHUP)
	syscall.Kill(pid, syscall.SIGHUP)
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case st := <-exited:
		return st
	case <-t.C:
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	syscall.Kill(pid, syscall.SIGKILL)
	return <-exited
}

// finish reports the exit status and closes the channel.
func (s *session) finish(st *os.ProcessState) {
	if st != nil {
		name, payload := exitMessage(st)
		s.c.sendRequest(name, payload)
	}
	s.c.Close()
}

// exitMessage encodes exit-status or exit-signal for st.
func exitMessage(st *os.ProcessState) (string, []byte) {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		b := wire.AppendString(nil, signalName(ws.Signal()))
		b = wire.AppendBool(b, ws.CoreDump())
		b = wire.AppendString(b, "")
		return "exit-signal", wire.AppendString(b, "")
	}
	return "exit-status", wire.AppendUint32(nil, uint32(st.ExitCode()))
}

var errNoProcess = errors.New("no process running")

// rawReader reads f with raw system calls (internal/rawio) when it can.
func rawReader(f *os.File) io.Reader {
	if r, _, ok := rawio.New(f); ok {
		return r
	}
	return f
}
