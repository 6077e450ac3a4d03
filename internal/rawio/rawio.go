// Package rawio reads and writes non-blocking descriptors (sockets,
// pipes) with raw system calls, for the bulk data paths of the SSH server.
//
// # Why
//
// A Go system call tells the scheduler it may block: if it lasts longer
// than a sysmon tick (20 µs), the runtime hands the goroutine's P to
// another thread, and sysmon keeps polling every 20 µs while that goes on.
// A 32 KiB write to a loopback TCP socket runs the receiver's TCP path
// inline and often takes that long, so a transfer paid a thread hand-off
// and several sysmon wake-ups per packet. On a non-blocking descriptor a
// read or write never waits (it returns EAGAIN and the poller waits
// instead), so the call can be made without telling the scheduler.
package rawio

import (
	"io"
	"net"
	"syscall"
)

// Reader reads from a non-blocking descriptor through its RawConn,
// waiting in the poller (with the descriptor's deadlines) when there is
// nothing to read.
type Reader struct{ RC syscall.RawConn }

// Writer writes everything it is given to a non-blocking descriptor,
// waiting in the poller when the descriptor is full.
type Writer struct{ RC syscall.RawConn }

var (
	_ io.Reader = Reader{}
	_ io.Writer = Writer{}
)

// New returns a Reader and a Writer for c when it exposes a RawConn of a
// non-blocking descriptor, and ok false otherwise (a raw call on a
// blocking descriptor could hold a thread and its P indefinitely).
func New(c any) (r Reader, w Writer, ok bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return r, w, false
	}
	rc, err := sc.SyscallConn()
	if err != nil || !nonBlocking(rc) {
		return r, w, false
	}
	return Reader{rc}, Writer{rc}, true
}

func (r Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.RC.Read(func(fd uintptr) bool {
		for {
			n, errno = rawRead(fd, p)
			switch errno {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// GrowPipe asks the kernel to give the pipe behind rc a buffer of n
// bytes (F_SETPIPE_SZ on Linux; elsewhere it fails and the pipe keeps
// its size). The kernel refuses more than fs.pipe-max-size, and any
// growth once the user's pipes hold fs.pipe-user-pages-soft: the pipe
// then keeps the size it had, which is only slower.
func GrowPipe(rc syscall.RawConn, n int) error { return growPipe(rc, n) }

// GrowPipe is GrowPipe for the Reader's descriptor.
func (r Reader) GrowPipe(n int) error { return growPipe(r.RC, n) }

func (w Writer) Write(p []byte) (int, error) {
	done := 0
	var errno syscall.Errno
	err := w.RC.Write(func(fd uintptr) bool {
		for done < len(p) {
			n, e := rawWrite(fd, p[done:])
			switch e {
			case 0:
				done += n
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return done, err
	case errno != 0:
		return done, errno
	}
	return done, nil
}

// TryWrite writes what fits now of a then b, never waiting; it returns
// how many bytes went out.
func TryWrite(rc syscall.RawConn, a, b []byte) int {
	n := 0
	rc.Write(func(fd uintptr) bool {
		for {
			k, e := rawWritev(fd, a, b)
			if e == syscall.EINTR {
				continue
			}
			if e == 0 {
				n = k
			}
			return true
		}
	})
	return n
}

// tcpConn is a TCP connection whose Read and Write are raw (see Reader).
type tcpConn struct {
	*net.TCPConn
	r Reader
	w Writer
}

func (c *tcpConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *tcpConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// WrapConn returns nc with raw reads and writes when it is a
// *net.TCPConn, and nc itself otherwise. Deadlines, Close and the
// addresses are nc's.
func WrapConn(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	r, w, ok := New(tc)
	if !ok {
		return nc
	}
	return &tcpConn{TCPConn: tc, r: r, w: w}
}
