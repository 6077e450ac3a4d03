package connection

import (
	"os"
	"os/exec"

	"github.com/offload/offload/sshd/wire"
)

// sftp starts the internal-sftp subsystem.
func (s *session) sftp() error {
	if err := s.begin("subsystem"); err != nil {
		return err
	}
	return s.sftpStarted()
}

// sftpAlwaysHelper makes tests exercise the helper child.
var sftpAlwaysHelper bool

// sftpStarted serves SFTP in process when no identity change is needed,
// else in a helper child running as the user: a Go process cannot drop
// privileges for one goroutine, so in-process serving as root would give
// every user root's file access.
func (s *session) sftpStarted() error {
	a, err := s.m.account()
	if err != nil {
		return err
	}
	if a.needsSwitch() || sftpAlwaysHelper {
		return s.sftpHelper(a)
	}
	p := &process{done: make(chan struct{})}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	s.later(func() { s.serveSFTP(p, a) })
	return nil
}

func (s *session) sftpHelper(a *account) error {
	argv := s.m.cfg.SFTPHelper
	if len(argv) == 0 {
		return refuse("subsystem", "no SFTP helper configured to run as %s", a.name)
	}
	saved := s.pty
	s.pty = nil // SFTP speaks binary: never on a terminal
	defer func() { s.pty = saved }()
	return s.startIn("subsystem", func() *exec.Cmd {
		c := &exec.Cmd{Path: argv[0], Args: argv}
		s.prepare(c, a, nil)
		if s.m.cfg.selfHelper {
			c.Env = append(c.Env, sftpHelperEnv+"=1")
		}
		return c
	})
}

// serveSFTP runs the SFTP server over the channel.
func (s *session) serveSFTP(p *process, a *account) {
	defer close(p.done)
	status := uint32(0)
	err := newSFTPServer(sftpChannel{s.c}, a.home).serve()
	if err != nil {
		s.m.log.Info("connection: sftp session ended", "err", err)
		status = 1
	}
	s.c.sendRequest("exit-status", wire.AppendUint32(nil, status))
	s.c.Close()
}

// sftpChannel is the SFTP server's view of its channel; closing is left
// to the session, after exit-status.
type sftpChannel struct{ c *channel }

func (t sftpChannel) Read(p []byte) (int, error) { return t.c.Read(p) }
func (t sftpChannel) chunk() int                 { return int(t.c.peerMax) }

func (t sftpChannel) ready() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.in.len() > 0 || t.c.eofIn || t.c.dead
}

// send writes the replies as channel data, each packet's header in
// place before its payload.
func (t sftpChannel) send(buf []byte, off, n int) error {
	w := &t.c.stdout
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sendIn(buf, off, n)
}

// sftpHelperEnv marks a re-executed program as an SFTP helper.
const sftpHelperEnv = "OFFLOAD_INTERNAL_SFTP"

// init turns a program re-executed as the SFTP helper into one before
// its main runs: the connection layer started it as the user, in the
// user's home directory, with the channel on stdin and stdout. The
// variable is set only by the server and grants nothing: the helper runs
// with the identity it was started with.
func init() {
	if os.Getenv(sftpHelperEnv) != "1" {
		return
	}
	os.Unsetenv(sftpHelperEnv)
	if err := SFTPServerMain(); err != nil {
		os.Stderr.WriteString("offload sftp helper: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

// SFTPServerMain serves SFTP on standard input and output until EOF, for
// programs that name themselves in Config.SFTPHelper (the default helper
// needs no such call: see init). Relative paths start in the working
// directory.
func SFTPServerMain() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	return newSFTPServer(sftpStdio{}, wd).serve()
}

// sftpStdio serves on standard input and output.
type sftpStdio struct{}

func (sftpStdio) Read(p []byte) (int, error) { return os.Stdin.Read(p) }
func (sftpStdio) ready() bool                { return false }
func (sftpStdio) chunk() int                 { return 0 }

func (sftpStdio) send(buf []byte, off, n int) error {
	_, err := os.Stdout.Write(buf[off : off+n])
	return err
}
