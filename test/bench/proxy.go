package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// delayProxy is a TCP proxy on loopback that delays each direction by
// half the round-trip time it emulates: every chunk read from one side is
// written to the other no earlier than oneWay after it was read. Up to
// buffer bytes per direction are held in flight, well above the
// bandwidth-delay product of the paths measured (100 ms at 1 GB/s is
// 100 MB), so the proxy's buffer is not what limits a transfer; its own
// ceiling is measured by proxyCeiling.
type delayProxy struct {
	l      net.Listener
	target string
	oneWay time.Duration
	buffer int
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// proxyChunk is the largest read: big enough that per-chunk costs stay
// small, small enough that the delay is applied at fine grain.
const proxyChunk = 256 << 10

// defaultProxyBuffer bounds the bytes in flight per direction.
const defaultProxyBuffer = 512 << 20

// newDelayProxy listens on addr (port 0) and forwards to target.
func newDelayProxy(addr, target string, rtt time.Duration, buffer int) (*delayProxy, error) {
	if _, err := checkLoopback(addr); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return nil, fmt.Errorf("bench: proxy: %w", err)
	}
	p := &delayProxy{l: l, target: target, oneWay: rtt / 2, buffer: buffer, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Port is the proxy's listening port.
func (p *delayProxy) Port() int { return p.l.Addr().(*net.TCPAddr).Port }

// Close stops the proxy and cuts every connection through it.
func (p *delayProxy) Close() error {
	err := p.l.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *delayProxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *delayProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.relay(c)
		}()
	}
}

// relay connects c to the target and pumps both directions until both
// have ended.
func (p *delayProxy) relay(c net.Conn) {
	defer c.Close()
	t, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer t.Close()
	p.track(c, true)
	p.track(t, true)
	defer p.track(c, false)
	defer p.track(t, false)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pump(t, c) }()
	go func() { defer wg.Done(); p.pump(c, t) }()
	wg.Wait()
}

// chunkPool recycles the proxy's read buffers.
var chunkPool = sync.Pool{New: func() any { return new([proxyChunk]byte) }}

// chunk is data read at a time.
type chunk struct {
	b  []byte
	at time.Time
}

// pump copies src to dst, each chunk oneWay after it was read. A
// semaphore of buffer bytes bounds what is held; when src ends, dst's
// write side is closed after the last chunk, as TCP would deliver FIN.
func (p *delayProxy) pump(dst, src net.Conn) {
	q := make(chan chunk, p.buffer/proxyChunk+1)
	room := newByteSem(p.buffer)
	go func() {
		defer close(q)
		for {
			b := chunkPool.Get().(*[proxyChunk]byte)[:]
			room.acquire(proxyChunk)
			n, err := src.Read(b)
			if n > 0 {
				room.release(proxyChunk - n)
				q <- chunk{b: b[:n], at: time.Now()}
			} else {
				room.release(proxyChunk)
				chunkPool.Put((*[proxyChunk]byte)(b[:proxyChunk]))
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for ch := range q {
		if !failed {
			time.Sleep(time.Until(ch.at.Add(p.oneWay)))
			if _, err := dst.Write(ch.b); err != nil {
				failed = true
				src.Close() // unblock the reader; the rest is dropped
			}
		}
		room.release(len(ch.b))
		chunkPool.Put((*[proxyChunk]byte)(ch.b[:proxyChunk]))
	}
	if tc, ok := dst.(*net.TCPConn); ok && !failed {
		tc.CloseWrite()
	}
}

// byteSem is a counting semaphore of bytes.
type byteSem struct {
	mu   sync.Mutex
	cond *sync.Cond
	free int
}

func newByteSem(n int) *byteSem {
	s := &byteSem{free: n}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *byteSem) acquire(n int) {
	s.mu.Lock()
	for s.free < n {
		s.cond.Wait()
	}
	s.free -= n
	s.mu.Unlock()
}

func (s *byteSem) release(n int) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.free += n
	s.mu.Unlock()
	s.cond.Broadcast()
}

// proxyCeiling sends size bytes through a delay proxy of the given RTT
// to a sink on loopback and returns the rate in MB/s: what the proxy can
// carry, so that a transfer through it measured well below this figure is
// limited by the SSH endpoints, not by the proxy.
func proxyCeiling(ctx context.Context, addr string, rtt time.Duration, size int64) (float64, error) {
	sink, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("bench: proxy ceiling: %w", err)
	}
	defer sink.Close()
	got := make(chan error, 1)
	go func() {
		c, err := sink.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		n, err := io.Copy(io.Discard, c)
		if err == nil && n != size {
			err = fmt.Errorf("sink got %d bytes, want %d", n, size)
		}
		got <- err
	}()
	p, err := newDelayProxy(addr, sink.Addr().String(), rtt, defaultProxyBuffer)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addr, fmt.Sprint(p.Port())))
	if err != nil {
		return 0, fmt.Errorf("bench: proxy ceiling: %w", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	start := time.Now()
	buf := make([]byte, proxyChunk)
	for left := size; left > 0; {
		n := int(min(int64(len(buf)), left))
		if _, err := c.Write(buf[:n]); err != nil {
			return 0, fmt.Errorf("bench: proxy ceiling: %w", err)
		}
		left -= int64(n)
	}
	c.(*net.TCPConn).CloseWrite()
	if err := <-got; err != nil {
		return 0, fmt.Errorf("bench: proxy ceiling: %w", err)
	}
	secs := time.Since(start).Seconds()
	if secs <= 0 {
		return 0, errors.New("bench: proxy ceiling: no time elapsed")
	}
	return float64(size) / secs / 1e6, nil
}
