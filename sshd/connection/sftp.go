package connection

import (
	"os/exec"

	"github.com/offload/offload/sshd/sftp"
)

// sftp serves internal-sftp with the flags on its command line: in
// process when the connection layer runs as the user (the daemon's
// post-auth process, or a server serving its own account), else in
// Config.SFTPHelper started as the user: a Go process cannot switch
// identity for one goroutine, so in-process serving as root would give
// every user root's file access.
func (s *session) sftp(cmd string) error {
	opts, err := sftp.ParseCommand(cmd)
	if err != nil {
		return refuse("subsystem", "%v", err)
	}
	a, err := s.m.account()
	if err != nil {
		return err
	}
	if _, err := s.m.processSession(); err != nil {
		s.m.log.Warn("connection: cannot open the session", "request", "subsystem", "err", err)
		return refuse("subsystem", "cannot open the session")
	}
	if a.needsSwitch() || sftpAlwaysHelper {
		return s.sftpHelper(a, cmd)
	}
	p := newProcess(nil)
	close(p.started)
	s.setProcess(p)
	s.later(func() { s.serveSFTP(p, a, opts) })
	return nil
}

// sftpAlwaysHelper makes tests exercise the helper child.
var sftpAlwaysHelper bool

// sftpHelper runs Config.SFTPHelper as the user, with internal-sftp's
// flags (after "--root DIR" when ChrootDirectory is set).
func (s *session) sftpHelper(a *account, cmd string) error {
	helper := s.m.cfg.SFTPHelper
	if len(helper) == 0 {
		return refuse("subsystem", "internal-sftp for %s needs Config.SFTPHelper: the connection layer does not run as that user", a.name)
	}
	words, err := sftp.SplitArgs(cmd)
	if err != nil {
		return refuse("subsystem", "%v", err)
	}
	argv := append([]string(nil), helper...)
	if root := s.m.cfg.ChrootDirectory; root != "" {
		argv = append(argv, "--root", root)
	}
	argv = append(argv, words[1:]...)
	saved := s.pty
	s.pty = nil // SFTP speaks binary: never on a terminal
	defer func() { s.pty = saved }()
	cio, err := s.openIO()
	if err != nil {
		return refuse("subsystem", "%v", err)
	}
	p := newProcess(nil)
	s.setProcess(p)
	s.later(func() { s.runHelper(p, a, argv, cio) })
	return nil
}

// runHelper supervises the helper as a session program. It is not
// started chrooted: it confines itself (--root).
func (s *session) runHelper(p *process, a *account, argv []string, cio *childIO) {
	s.runCommand(p, cio, argv[0], func() (*exec.Cmd, error) {
		c := &exec.Cmd{Path: argv[0], Args: argv, Stdin: cio.stdin, Stdout: cio.stdout, Stderr: cio.stderr}
		s.prepare(c, a, nil)
		if c.SysProcAttr.Chroot != "" {
			c.SysProcAttr.Chroot, c.Dir = "", "/"
		}
		err := s.startChild(c)
		if err != nil && c.Dir != "/" { // no usable home: start in /, as sessions do
			c = &exec.Cmd{Path: argv[0], Args: argv, Stdin: cio.stdin, Stdout: cio.stdout, Stderr: cio.stderr,
				Env: c.Env, Dir: "/", SysProcAttr: c.SysProcAttr}
			err = s.startChild(c)
		}
		return c, err
	})
}

// serveSFTP runs the SFTP server over the channel.
func (s *session) serveSFTP(p *process, a *account, opts *sftp.Options) {
	defer close(p.done)
	umask := s.m.umask()
	host, _ := hostPort(s.m.addrs.Remote)
	cfg := &sftp.Config{Options: *opts, User: a.name, UID: a.uid, Home: a.home,
		Root: s.m.cfg.ChrootDirectory, Umask: &umask, ClientAddr: host, Logger: s.m.log}
	status := uint32(0)
	if err := sftp.Serve(sftpChannel{s.c}, cfg); err != nil {
		s.m.log.Info("connection: sftp session ended", "err", err)
		status = 1
	}
	s.finishStatus(status)
}

// sftpChannel is the SFTP server's view of its channel: a Buffered
// PacketWriter. Closing is left to the session, after exit-status.
type sftpChannel struct{ c *channel }

func (t sftpChannel) Read(p []byte) (int, error)  { return t.c.Read(p) }
func (t sftpChannel) Write(p []byte) (int, error) { return t.c.Write(p) }
func (t sftpChannel) PacketSize() int             { return int(t.c.peerMax) }
func (t sftpChannel) Headroom() int               { return dataHeaderLen }

func (t sftpChannel) Buffered() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.in.len() > 0 || t.c.eofIn || t.c.dead
}

// WritePackets sends the replies as channel data, each packet's header
// in place before its payload.
func (t sftpChannel) WritePackets(buf []byte, off, n int) error {
	w := &t.c.stdout
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sendIn(buf, off, n)
}

var (
	_ sftp.PacketWriter = sftpChannel{}
	_ sftp.Buffered     = sftpChannel{}
)
