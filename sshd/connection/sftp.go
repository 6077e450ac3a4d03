package connection

import (
	"encoding/binary"
	"io"
	"os"
	"os/exec"

	"github.com/pkg/sftp"

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

// serveSFTP runs github.com/pkg/sftp over the channel.
func (s *session) serveSFTP(p *process, a *account) {
	defer close(p.done)
	status := uint32(0)
	out := newBatchWriter(&s.c.stdout)
	srv, err := sftp.NewServer(&sftpStream{c: s.c, w: out}, sftp.WithServerWorkingDirectory(a.home))
	if err == nil {
		err = srv.Serve()
		srv.Close()
	}
	out.Close()
	if err != nil && err != io.EOF {
		s.m.log.Info("connection: sftp session ended", "err", err)
		status = 1
	}
	s.c.sendRequest("exit-status", wire.AppendUint32(nil, status))
	s.c.Close()
}

// sftpStream gives the SFTP server the channel; closing is left to the
// session, after exit-status. Replies go through a batchWriter so that
// queued replies share full packets. pkg/sftp writes each reply as a
// header then a payload; sftpStream holds a header that announces more
// bytes and queues it with its payload in one step.
type sftpStream struct {
	c    *channel
	w    *batchWriter
	held []byte // a header waiting for its payload
}

func (t *sftpStream) Read(p []byte) (int, error) { return t.c.Read(p) }
func (t *sftpStream) Close() error               { return nil }

func (t *sftpStream) Write(p []byte) (int, error) {
	if len(t.held) > 0 {
		h := len(t.held)
		n, err := t.w.writeBuffers(t.held, p)
		t.held = t.held[:0]
		return max(n-h, 0), err
	}
	if len(p) >= 4 && len(p) <= maxHeldHeader && int64(binary.BigEndian.Uint32(p))+4 > int64(len(p)) {
		t.held = append(t.held[:0], p...)
		return len(p), nil
	}
	return t.w.Write(p)
}

// maxHeldHeader bounds what sftpStream holds back.
const maxHeldHeader = 64

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
// needs no such call: see init).
func SFTPServerMain() error {
	srv, err := sftp.NewServer(stdio{})
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.Serve(); err != nil && err != io.EOF {
		return err
	}
	return nil
}

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return nil }
