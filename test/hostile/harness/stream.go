package harness

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// Stream is a healthy session: `cat` echoing a deterministic stream.
type Stream struct {
	client  *ssh.Client
	session *ssh.Session
	stdin   io.WriteCloser

	sent, verified atomic.Int64
	sentSum        hash.Hash
	recvSum        hash.Hash

	stop     chan struct{}
	writerWG sync.WaitGroup
	readDone chan error
	chunk    int
	pause    time.Duration
}

// StreamChunk and StreamPause pace the healthy stream: a chunk every
// pause, a few MB/s, enough to notice a stall without loading the machine.
const (
	StreamChunk = 8 << 10
	StreamPause = 5 * time.Millisecond
)

// StartStream logs in to s, runs `cat` and starts streaming.
func (s *Server) StartStream() (*Stream, error) {
	c, err := s.Dial()
	if err != nil {
		return nil, fmt.Errorf("healthy session: dial: %w", err)
	}
	st, err := startStream(c, StreamChunk, StreamPause)
	if err != nil {
		c.Close()
		return nil, err
	}
	return st, nil
}

func startStream(c *ssh.Client, chunk int, pause time.Duration) (*Stream, error) {
	sess, err := NewSession(c)
	if err != nil {
		return nil, fmt.Errorf("healthy session: new session: %w", err)
	}
	st := &Stream{client: c, session: sess, sentSum: sha256.New(), recvSum: sha256.New(),
		stop: make(chan struct{}), readDone: make(chan error, 1), chunk: chunk, pause: pause}
	if st.stdin, err = sess.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := sess.Start("cat"); err != nil {
		return nil, fmt.Errorf("healthy session: exec cat: %w", err)
	}
	st.writerWG.Add(1)
	go st.write()
	go func() { st.readDone <- st.read(out) }()
	return st, nil
}

// source is the deterministic byte stream both sides generate.
func source() *rand.ChaCha8 { return rand.NewChaCha8([32]byte{'o', 'f', 'f', 'l', 'o', 'a', 'd'}) }

func (st *Stream) write() {
	defer st.writerWG.Done()
	defer st.stdin.Close()
	src := source()
	buf := make([]byte, st.chunk)
	t := time.NewTicker(st.pause)
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-t.C:
		}
		src.Read(buf)
		if _, err := st.stdin.Write(buf); err != nil {
			return
		}
		st.sentSum.Write(buf)
		st.sent.Add(int64(len(buf)))
	}
}

func (st *Stream) read(r io.Reader) error {
	src := source()
	got := make([]byte, 32<<10)
	want := make([]byte, 32<<10)
	for {
		n, err := r.Read(got)
		if n > 0 {
			src.Read(want[:n])
			if !bytes.Equal(got[:n], want[:n]) {
				return fmt.Errorf("healthy session: byte mismatch after %d verified bytes", st.verified.Load())
			}
			st.recvSum.Write(got[:n])
			st.verified.Add(int64(n))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("healthy session: read after %d bytes: %w", st.verified.Load(), err)
		}
	}
}

// Verified returns the bytes echoed back and checked so far.
func (st *Stream) Verified() int64 { return st.verified.Load() }

// WaitProgress waits until at least n more bytes than now have been
// verified, or the stream failed, or timeout.
func (st *Stream) WaitProgress(n int64, timeout time.Duration) error {
	target := st.verified.Load() + n
	deadline := time.Now().Add(timeout)
	for st.verified.Load() < target {
		select {
		case err := <-st.readDone:
			st.readDone <- err
			if err == nil {
				err = errors.New("healthy session: output ended early")
			}
			return err
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("healthy session stalled: %d bytes verified, waited %v for %d more", st.verified.Load(), timeout, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Stop ends the stream: it stops writing, closes stdin, waits for the
// echo to end and the command to exit, and compares the checksums. It
// returns the bytes transferred each way.
func (st *Stream) Stop(timeout time.Duration) (int64, error) {
	defer st.client.Close()
	close(st.stop)
	st.writerWG.Wait()
	var err error
	select {
	case err = <-st.readDone:
	case <-time.After(timeout):
		return st.verified.Load(), fmt.Errorf("healthy session: echo did not end within %v (%d of %d bytes back)", timeout, st.verified.Load(), st.sent.Load())
	}
	if err != nil {
		return st.verified.Load(), err
	}
	if err := st.session.Wait(); err != nil {
		return st.verified.Load(), fmt.Errorf("healthy session: cat: %w", err)
	}
	sent, got := st.sent.Load(), st.verified.Load()
	if sent != got || !bytes.Equal(st.sentSum.Sum(nil), st.recvSum.Sum(nil)) {
		return got, fmt.Errorf("healthy session: sent %d bytes (sha256 %x), got %d back (sha256 %x)", sent, st.sentSum.Sum(nil), got, st.recvSum.Sum(nil))
	}
	return got, nil
}
