package rawio

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestPipeRoundTrip writes far more than a pipe holds: the writer waits in
// the poller while the reader drains, and every byte arrives in order,
// then EOF.
func TestPipeRoundTrip(t *testing.T) {
	pr, pw := pipe(t)
	r, _, ok := New(pr)
	_, w, ok2 := New(pw)
	if !ok || !ok2 {
		t.Fatal("New: no RawConn for a pipe")
	}
	want := randomBytes(3<<20 + 17)
	errc := make(chan error, 1)
	go func() {
		_, err := w.Write(want)
		pw.Close()
		errc <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
}

// TestTryWrite fills a pipe without waiting: it writes what fits, in
// order across its two buffers, and then nothing.
func TestTryWrite(t *testing.T) {
	pr, pw := pipe(t)
	rc, err := pw.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	a, b := randomBytes(40000), randomBytes(50000)
	n := TryWrite(rc, a, b)
	if n <= len(a) || n >= len(a)+len(b) {
		t.Fatalf("TryWrite wrote %d bytes of %d into an empty pipe", n, len(a)+len(b))
	}
	if m := TryWrite(rc, []byte("x"), nil); m != 0 {
		t.Fatalf("TryWrite into a full pipe wrote %d bytes", m)
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(pr, got); err != nil {
		t.Fatal(err)
	}
	if want := append(a, b...)[:n]; !bytes.Equal(got, want) {
		t.Fatal("pipe holds other bytes than TryWrite wrote")
	}
}

// TestDeadline checks that a read waiting for data ends at the
// descriptor's deadline with os.ErrDeadlineExceeded.
func TestDeadline(t *testing.T) {
	pr, _ := pipe(t)
	r, _, _ := New(pr)
	pr.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v", err)
	}
}

// TestClosedPeer checks errors from the kernel come back as they are:
// writing to a pipe whose reader is gone is EPIPE.
func TestClosedPeer(t *testing.T) {
	pr, pw := pipe(t)
	pr.Close()
	_, w, _ := New(pw)
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write to a pipe without reader: %v", err)
	}
}

// TestWrapConn echoes data through a wrapped loopback TCP connection and
// checks that other connections are returned unwrapped.
func TestWrapConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := WrapConn(nc)
	defer c.Close()
	if _, ok := c.(*tcpConn); !ok {
		t.Fatalf("WrapConn(%T) = %T", nc, c)
	}
	want := randomBytes(1 << 20)
	go c.Write(want)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("echo differs")
	}
	if _, ok := c.(syscall.Conn); !ok {
		t.Error("wrapped conn lost SyscallConn")
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if WrapConn(a) != a {
		t.Error("WrapConn changed a net.Pipe conn")
	}
}

// TestBlockingRefused checks that New refuses a blocking descriptor, on
// which a raw read would hold its thread and P until data came.
func TestBlockingRefused(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(fds[0]), "blocking-r")
	w := os.NewFile(uintptr(fds[1]), "blocking-w")
	defer r.Close()
	defer w.Close()
	if _, _, ok := New(r); ok {
		t.Error("New accepted a blocking pipe")
	}
	if _, _, ok := New(struct{ io.Reader }{r}); ok {
		t.Error("New accepted a value without SyscallConn")
	}
}
