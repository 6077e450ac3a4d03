package ipc

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/offload/offload/internal/testenv"
)

// pair returns two running peers; h handles what b receives.
func pair(t *testing.T, h Handler) (a, b *Peer) {
	t.Helper()
	fa, fb, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	if a, err = NewPeer(fa, func(m *Message) { closeFiles(m.Files) }); err != nil {
		t.Fatal(err)
	}
	if b, err = NewPeer(fb, h); err != nil {
		t.Fatal(err)
	}
	go a.Run()
	go b.Run()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestCalls(t *testing.T) {
	var b *Peer
	ready := make(chan struct{})
	a, bb := pair(t, func(m *Message) {
		<-ready
		go func() {
			if string(m.Payload) == "fail" {
				b.Reply(m, nil, errors.New("refused"))
				return
			}
			b.Reply(m, append([]byte("echo:"), m.Payload...), nil)
		}()
	})
	b = bb
	close(ready)
	ctx := context.Background()
	got, err := a.Call(ctx, TypeSign, []byte("hi"))
	if err != nil || string(got) != "echo:hi" {
		t.Fatalf("Call: %q %v", got, err)
	}
	_, err = a.Call(ctx, TypeSign, []byte("fail"))
	var re *RemoteError
	if !errors.As(err, &re) || re.Msg != "refused" {
		t.Fatalf("failed call: %v", err)
	}
	if _, err := a.Call(ctx, TypeSign, make([]byte, MaxMessage+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized call: %v", err)
	}
	big := make([]byte, MaxMessage-8)
	if got, err := a.Call(ctx, TypeSign, big); err != nil || len(got) != len(big)+5 {
		t.Fatalf("largest call: %d bytes, %v", len(got), err)
	}
}

// TestFilePassing: a descriptor sent with a message arrives, usable, and
// an os.Pipe end arrives in blocking mode, as the stdio of a program the
// receiver starts must be (the PAM keeper starts the session's
// program with descriptors the post-auth process sends it).
func TestFilePassing(t *testing.T) {
	got := make(chan *Message, 1)
	a, _ := pair(t, func(m *Message) { got <- m })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := a.Notify(TypeNewConn, (&NewConn{ConnID: 1}).Marshal(), w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	m := <-got
	if len(m.Files) != 1 {
		t.Fatalf("%d files arrived", len(m.Files))
	}
	if !blocking(t, m.Files[0]) {
		t.Error("a passed pipe arrived non-blocking: a program given it as stdio would see EAGAIN")
	}
	m.Files[0].Write([]byte("through"))
	m.Files[0].Close()
	b, _ := io.ReadAll(r)
	if string(b) != "through" {
		t.Fatalf("read %q through the passed descriptor", b)
	}
}

// TestPeerDeathFailsCalls: a call pending when the other side goes away
// fails at once with ErrClosed.
func TestPeerDeathFailsCalls(t *testing.T) {
	a, b := pair(t, func(*Message) {}) // never replies
	errc := make(chan error, 1)
	go func() {
		_, err := a.Call(context.Background(), TypeDecide, nil)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	b.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("pending call: %v, want ErrClosed", err)
		}
	case <-testenv.Timeout(t):
		t.Fatal("pending call hangs after the other side closed")
	}
	if _, err := a.Call(context.Background(), TypeDecide, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after close: %v", err)
	}
}

// TestForgedReply: a reply to a request never made is a protocol error
// that ends the connection; one that comes after its caller gave up is
// dropped.
func TestForgedReply(t *testing.T) {
	a, b := pair(t, func(*Message) {})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := a.Call(ctx, TypeSign, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call: %v", err)
	}
	b.send(TypeReply, 1, encodeReply(nil, nil), nil) // late: dropped
	b.send(TypeReply, 99, encodeReply(nil, nil), nil)
	select {
	case <-a.Done():
		var pe *ProtocolError
		if !errors.As(a.Err(), &pe) {
			t.Fatalf("read loop ended with %v", a.Err())
		}
	case <-testenv.Timeout(t):
		t.Fatal("a forged reply did not end the connection")
	}
}

// TestUnexpectedFilesClosed: descriptors beyond the maxFiles a message
// may carry end the connection and are closed, not leaked.
func TestUnexpectedFilesClosed(t *testing.T) {
	a, b := pair(t, func(m *Message) { closeFiles(m.Files) })
	var rs, ws []*os.File
	for range maxFiles + 1 {
		r, w, _ := os.Pipe()
		defer r.Close()
		rs, ws = append(rs, r), append(ws, w)
	}
	a.Notify(TypeLog, nil, ws...)
	closeFiles(ws)
	<-b.Done()
	for _, r := range rs {
		r.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(r); err != nil {
			t.Fatalf("a descriptor sent along was kept open: %v", err)
		}
	}
}

// blocking reports whether f's descriptor is in blocking mode.
func blocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK == 0
}
