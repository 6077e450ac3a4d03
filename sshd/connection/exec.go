package connection

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/offload/offload/internal/rawio"
	"github.com/offload/offload/sshd/wire"
)

// Session program i/o.
const (
	ptyDrainTime = 2 * time.Second // output still read after a pty child exits
	stdinBufSize = 32 << 10
)

// process is a session program. It exists from the request that starts
// it; cmd is set and started is closed once it runs (or failed to).
type process struct {
	cmd     *exec.Cmd
	pty     *os.File      // pty master, nil without a pty
	started chan struct{} // closed after cmd is set (nil when it failed)
	done    chan struct{} // closed once the process is reaped and reported
}

func newProcess(ptm *os.File) *process {
	return &process{pty: ptm, started: make(chan struct{}), done: make(chan struct{})}
}

// running returns the started command, or nil.
func (p *process) running() *exec.Cmd {
	select {
	case <-p.started:
		return p.cmd
	default:
		return nil
	}
}

// childIO is a session program's standard streams: the child's ends and
// ours (pipes, or a pty whose master is both of ours).
type childIO struct {
	stdin, stdout, stderr *os.File // the child's
	in, out, errOut       *os.File // ours; out is the pty master with a pty
	tty                   *os.File
}

func (io *childIO) closeChild() { closeAll(io.stdin, io.stdout, io.stderr, io.tty) }
func (io *childIO) closeOurs()  { closeAll(io.in, io.out, io.errOut) }

// start prepares cmd (a login shell when empty) and runs it after the
// request's reply: first the rc files or xauth (rc.go), then the program.
func (s *session) start(req, cmd string, orig *string) error {
	a, err := s.m.account()
	if err != nil {
		return err
	}
	if _, err := s.m.processSession(); err != nil {
		s.m.log.Warn("connection: cannot open the session", "request", req, "err", err)
		return refuse(req, "cannot open the session")
	}
	cio, err := s.openIO()
	if err != nil {
		s.m.log.Warn("connection: cannot set up session i/o", "request", req, "err", err)
		return refuse(req, "%v", err)
	}
	p := newProcess(nil)
	if s.pty != nil {
		p.pty = cio.out
		s.c.resize.Store(cio.out)
	}
	s.setProcess(p)
	pre := s.prelude(a, req == "subsystem")
	s.later(func() { s.runProgram(p, a, cmd, orig, cio, pre) })
	return nil
}

// openIO makes the child's streams: a pty when one was requested, else
// three pipes.
func (s *session) openIO() (*childIO, error) {
	if s.pty != nil {
		return s.openPTY()
	}
	var fds [6]*os.File // stdin r,w; stdout r,w; stderr r,w
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(fds[:i]...)
			return nil, err
		}
		fds[i], fds[i+1] = r, w
	}
	return &childIO{stdin: fds[0], in: fds[1], out: fds[2], stdout: fds[3], errOut: fds[4], stderr: fds[5]}, nil
}

// runProgram runs the prelude, then the program, and supervises it until
// it has exited and its output is forwarded.
func (s *session) runProgram(p *process, a *account, cmd string, orig *string, cio *childIO, pre *prelude) {
	if s.pty != nil {
		defer close(p.done)
		s.runOnPTY(p, a, cmd, orig, cio, pre)
		return
	}
	s.runCommand(p, cio, a.shell, func() (*exec.Cmd, error) {
		s.runPrelude(a, pre, cio)
		return s.startIn(a, cmd, orig, cio)
	})
}

// runCommand supervises a program on pipes: stdin, stdout and stderr are
// forwarded while start starts it; then it is reaped, its output drained
// and its exit reported.
func (s *session) runCommand(p *process, cio *childIO, prog string, start func() (*exec.Cmd, error)) {
	defer close(p.done)
	s.m.goSafe("stdin", s.c, func() { s.pumpStdin(cio.in) })
	outDone := make(chan struct{}, 2)
	sent := func() { outDone <- struct{}{} } // deferred: also after a panic
	s.m.goSafe("stdout", s.c, func() { defer sent(); s.c.stdout.ReadFrom(rawReader(cio.out)) })
	s.m.goSafe("stderr", s.c, func() { defer sent(); s.c.stderr.ReadFrom(rawReader(cio.errOut)) })
	c, err := start()
	cio.closeChild()
	var st *os.ProcessState
	if err == nil {
		p.cmd = c
	}
	close(p.started)
	if err == nil {
		st = s.reap(waitProcess(c))
	}
	for n := 0; n < 2; n++ {
		select {
		case <-outDone:
		case <-s.c.ctx.Done():
			closeAll(cio.out, cio.errOut)
			<-outDone
		}
	}
	cio.closeOurs()
	if err != nil {
		s.startFailed(prog, err) // the stderr copy is over
	}
	s.finishOr(st, err)
}

// runOnPTY is runProgram on a pty: the prelude's output, then (for a
// login shell) the last login and /etc/motd, then the program's output.
// OpenSSH prints the login messages before the rc files run; here they
// follow the rc output, because the login record needs the program's
// process id.
func (s *session) runOnPTY(p *process, a *account, cmd string, orig *string, cio *childIO, pre *prelude) {
	ptm := cio.out
	s.m.goSafe("pty input", s.c, func() { s.pumpPTYInput(ptm) })
	if pre != nil {
		done := s.copyPTY(ptm)
		s.runPrelude(a, pre, cio)
		ptm.SetReadDeadline(time.Now()) // stop the copy; what was read is sent
		<-done
		ptm.SetReadDeadline(time.Time{})
	}
	c, err := s.startIn(a, cmd, orig, cio)
	cio.closeChild()
	var st *os.ProcessState
	var rec *LoginRecord
	if err == nil {
		p.cmd = c
		close(p.started)
		var last LastLogin
		rec, last = s.recordLogin(a, c.Process.Pid)
		if cmd == "" {
			s.c.Write(s.loginMessages(a, last))
		}
	} else {
		close(p.started)
		s.startFailed(a.shell, err)
	}
	outDone := s.copyPTY(ptm)
	if err == nil {
		st = s.reap(waitProcess(c))
	}
	select {
	case <-outDone:
	case <-time.After(ptyDrainTime):
	case <-s.c.ctx.Done():
	}
	ptm.SetReadDeadline(time.Now())
	<-outDone
	s.c.resize.Store(nil)
	cio.closeOurs()
	s.recordLogout(rec)
	s.finishOr(st, err)
}

// copyPTY forwards the pty's output until it ends or its read deadline
// passes.
func (s *session) copyPTY(ptm *os.File) chan struct{} {
	done := make(chan struct{})
	s.m.goSafe("pty output", s.c, func() {
		defer close(done)
		s.c.stdout.ReadFrom(eioIsEOF{ptm})
	})
	return done
}

// startFailed reports a program that could not start, as OpenSSH's
// child does (perror, exit 1).
func (s *session) startFailed(prog string, err error) {
	s.m.log.Warn("connection: cannot start session program", "program", prog, "err", err)
	s.c.stderr.Write([]byte(prog + ": " + err.Error() + "\r\n"))
}

// finishOr reports st, or exit status 1 when the program did not start.
func (s *session) finishOr(st *os.ProcessState, err error) {
	if err != nil {
		s.finishStatus(1)
		return
	}
	s.finish(st)
}

// startIn starts the program in the user's home directory, or in / when
// that fails: the child's chdir runs with the user's identity and the
// home directory may be missing or closed to the user (root may not even
// see it: NFS with root squash). OpenSSH does the same.
func (s *session) startIn(a *account, cmd string, orig *string, cio *childIO) (*exec.Cmd, error) {
	c := s.command(a, cmd, orig, cio)
	err := s.startChild(c)
	if err != nil && c.Dir != "/" {
		s.m.log.Info("connection: cannot start in the home directory, using /", "home", c.Dir, "err", err)
		c = s.command(a, cmd, orig, cio)
		c.Dir = "/"
		err = s.startChild(c)
	}
	return c, err
}

// umaskMu serialises the process umask around starting children: a child
// inherits the umask it is forked with, and os/exec cannot set it.
var umaskMu sync.Mutex

// startChild starts c with the session umask. The process umask changes
// only for the instant of the fork (and only when it differs); the
// connection layer's own files (SFTP, sockets) set their modes
// explicitly.
func (s *session) startChild(c *exec.Cmd) error {
	mask := s.m.umask()
	if ps, _ := s.m.processSession(); ps != nil {
		return ps.Start(c, mask)
	}
	umaskMu.Lock()
	defer umaskMu.Unlock()
	old := syscall.Umask(int(mask))
	err := c.Start()
	syscall.Umask(old)
	return err
}

// command builds the exec.Cmd for cmd run by the user's shell.
func (s *session) command(a *account, cmd string, orig *string, cio *childIO) *exec.Cmd {
	c := &exec.Cmd{Path: a.shell, Args: []string{filepath.Base(a.shell), "-c", cmd}}
	if cmd == "" {
		c.Args = []string{"-" + filepath.Base(a.shell)} // login shell
	}
	s.prepare(c, a, orig)
	c.Stdin, c.Stdout, c.Stderr = cio.stdin, cio.stdout, cio.stderr
	if s.pty != nil {
		c.SysProcAttr.Setctty = true
		c.SysProcAttr.Ctty = 0
	}
	return c
}

// prepare sets environment, directory, credentials and chroot.
func (s *session) prepare(c *exec.Cmd, a *account, orig *string) {
	c.Env = s.environ(a, orig)
	c.Dir = a.home // see startIn
	if a.home == "" || !filepath.IsAbs(a.home) {
		c.Dir = "/"
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: a.cred, Chroot: s.m.cfg.ChrootDirectory}
}

// environ assembles the child's environment in OpenSSH's order (a later
// value replaces an earlier one): the client's accepted variables; USER,
// LOGNAME, HOME, PATH, MAIL, SHELL, TZ, TERM, DISPLAY; SSH_AUTH_SOCK;
// authorized_keys environment=; ~/.ssh/environment (PermitUserEnvironment);
// SetEnv; then SSH_CLIENT, SSH_CONNECTION, SSH_USER_AUTH, SSH_TTY and
// SSH_ORIGINAL_COMMAND.
func (s *session) environ(a *account, orig *string) []string {
	var e envList
	for _, kv := range s.env {
		e.setPair(kv)
	}
	e.set("USER", a.name)
	e.set("LOGNAME", a.name)
	e.set("HOME", a.home)
	e.set("PATH", hostEnvPath(a.uid))
	e.set("MAIL", "/var/mail/"+a.name)
	e.set("SHELL", a.shell)
	if tz, ok := os.LookupEnv("TZ"); ok {
		e.set("TZ", tz)
	}
	if s.pty != nil {
		e.set("TERM", s.pty.term)
	}
	if s.x11 != nil {
		e.set("DISPLAY", s.x11.display)
	}
	if sock := s.m.agentSocket(); sock != "" {
		e.set("SSH_AUTH_SOCK", sock)
	}
	for _, kv := range s.m.perm.Environment {
		if s.m.cfg.keyEnvAllowed(kv) {
			e.setPair(kv)
		}
	}
	for _, kv := range s.userEnvironment(a) {
		e.setPair(kv)
	}
	for _, kv := range s.m.sessionEnv() { // PAM's, as SetEnv would set them
		e.setPair(kv)
	}
	for _, kv := range s.m.cfg.SetEnv {
		e.setPair(kv)
	}
	rh, rp := hostPort(s.m.addrs.Remote)
	lh, lp := hostPort(s.m.addrs.Local)
	e.set("SSH_CLIENT", rh+" "+rp+" "+lp)
	e.set("SSH_CONNECTION", rh+" "+rp+" "+lh+" "+lp)
	if path := s.m.authInfoPath(a); path != "" {
		e.set("SSH_USER_AUTH", path)
	}
	if s.pty != nil && s.pty.name != "" {
		e.set("SSH_TTY", s.pty.name)
	}
	if orig != nil {
		e.set("SSH_ORIGINAL_COMMAND", *orig)
	}
	return e.vars
}

// userEnvironment reads ~/.ssh/environment when PermitUserEnvironment
// allows it.
func (s *session) userEnvironment(a *account) []string {
	allow := s.m.cfg.PermitUserEnvironment
	if len(allow) == 0 || a.home == "" {
		return nil
	}
	path := filepath.Join(a.home, ".ssh", "environment")
	data, err := readUserFile(a, path, maxEnvFileBytes)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.m.log.Info("connection: ~/.ssh/environment not read", "err", err)
		}
		return nil
	}
	vars, err := parseEnvironmentFile(data, allow)
	if err != nil {
		s.m.log.Warn("connection: ~/.ssh/environment refused", "err", err)
	}
	return vars
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

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
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

// reap returns the exit state, or nil when the channel dies first. The
// program is then left running, as OpenSSH's sshd leaves it: the caller
// closes its ends of the program's streams (EOF on stdin, EPIPE on
// output; a pty's hangup, which the kernel turns into SIGHUP for the
// terminal's session) and the process is reaped whenever it exits. A
// job that survives a dropped connection (a backup writing to a file,
// say) keeps running, and a shell's startup files are not cut short.
func (s *session) reap(exited <-chan *os.ProcessState) *os.ProcessState {
	select {
	case st := <-exited:
		return st
	case <-s.c.ctx.Done():
		return nil
	}
}

// finish reports the exit status and closes the channel.
func (s *session) finish(st *os.ProcessState) {
	if st != nil {
		name, payload := exitMessage(st)
		s.c.sendRequest(name, payload)
	}
	s.c.Close()
}

// finishStatus reports an exit status and closes the channel.
func (s *session) finishStatus(code uint32) {
	s.c.sendRequest("exit-status", wire.AppendUint32(nil, code))
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
