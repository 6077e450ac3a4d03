package main

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/offload/offload/internal/rawio"
)

// stdioConn returns the connection inetd mode (-i) serves: stdin itself
// when it is a socket (inetd, systemd Accept=yes), otherwise stdin and
// stdout joined (pipes, as OpenSSH's ProxyCommand and regress harness
// give).
func stdioConn() net.Conn {
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if c, err := rawio.FileConn(os.Stdin); err == nil {
			return c
		}
	}
	return &pipeConn{r: pollable(0, "stdin"), w: pollable(1, "stdout")}
}

// pollable returns a File for fd in non-blocking mode, so that the
// runtime poller serves it and deadlines (LoginGraceTime) work. A file
// that cannot be polled (a regular file) still works, without deadlines.
func pollable(fd int, name string) *os.File {
	syscall.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), name)
}

// pipeConn is a net.Conn over two files. Deadlines apply where the files
// support them (pipes do) and are otherwise ignored.
type pipeConn struct {
	r, w *os.File
}

func (c *pipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }

func (c *pipeConn) Close() error {
	return errors.Join(c.r.Close(), c.w.Close())
}

func (c *pipeConn) LocalAddr() net.Addr  { return pipeAddr("stdout") }
func (c *pipeConn) RemoteAddr() net.Addr { return pipeAddr("stdin") }

func (c *pipeConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *pipeConn) SetReadDeadline(t time.Time) error {
	return ignoreNoDeadline(c.r.SetReadDeadline(t))
}
func (c *pipeConn) SetWriteDeadline(t time.Time) error {
	return ignoreNoDeadline(c.w.SetWriteDeadline(t))
}

func ignoreNoDeadline(err error) error {
	if errors.Is(err, os.ErrNoDeadline) {
		return nil
	}
	return err
}

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }
