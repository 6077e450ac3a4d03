package connection

import (
	"os"
	"syscall"

	"github.com/offload/offload/internal/rawio"
)

// A session program's stdin pipe can be the channel's sink: while the
// stdin pump is idle (waiting in Read with the ring empty) the read loop
// writes arriving data straight to the pipe, without blocking (the pipe
// is non-blocking; what does not fit goes to the ring and the pump takes
// over). An upload then costs no goroutine switch per packet (13-22 us
// on a small VM, see BenchmarkChannelHandOff) and one user-space copy
// less. While the read loop writes, sinkBusy keeps the pump in Read, so
// bytes reach the pipe in order and the pump never writes concurrently.
//
// # Batching
//
// When the transport can say when it is about to wait for the network
// (wire.ReadWaiter), data that arrives in a burst is held in the
// channel's pend buffer and written with one write(2) when the burst
// ends: just before the read loop would wait, when a packet other than
// more data for the same channel arrives, or when pend is full. A 1 GiB
// upload then costs the program (cat, tar) a third of the wake-ups: with
// 32 KiB packets each write(2) woke it once. Holding is safe because it
// only lasts while packets that have already arrived are decoded; the
// window is given back when the bytes are written, as before.

// setSink makes f (or nothing, when f is nil) the channel's sink. A
// descriptor that is not non-blocking is no sink: the read loop must
// never wait on the program.
func (c *channel) setSink(f *os.File) {
	var rc syscall.RawConn
	if f != nil {
		_, w, ok := rawio.New(f)
		if !ok {
			return
		}
		rc = w.RC
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.sinkBusy {
		c.sinkWait = true
		c.cond.Wait()
	}
	c.sink = rc
	if len(c.pend) > 0 { // the pump reads it from the ring
		c.in.write(c.pend)
		c.pend = c.pend[:0]
		c.cond.Broadcast()
	}
}

// maxPend bounds the data held for one write to the sink: a pipe holds
// 64 KiB unless resized, so a bigger write would only fill it partly.
// Measured against 96 and 128 KiB (docs/benchmarks.md), 64 KiB moved a
// 1 GiB upload fastest and with the least CPU.
const maxPend = 64 << 10

// sinkLocked takes d for the sink: it writes d now or, when hold is set,
// appends it to pend until pend and d together reach maxPend, then
// writes both with one writev(2). c.mu is held on entry and on return but
// not during a write. It returns false, having done nothing, when the
// sink may not be used now.
func (c *channel) sinkLocked(d []byte, hold bool) bool {
	if c.sink == nil || !c.readerIdle || c.in.len() > 0 || c.sinkBusy || len(d) == 0 {
		return false
	}
	if hold && len(c.pend)+len(d) < maxPend {
		if c.pend == nil {
			c.pend = make([]byte, 0, maxPend)
		}
		c.pend = append(c.pend, d...)
		return true
	}
	c.writeSinkLocked(c.pend, d)
	c.pend = c.pend[:0]
	return true
}

// growSinkLocked enlarges the program's stdin pipe, once, when the
// program falls behind: the sink found the pipe full, or data waits in
// the ring for the pump. c.mu is held.
func (c *channel) growSinkLocked() {
	if c.sink != nil && !c.sinkGrown {
		c.sinkGrown = true
		rawio.GrowPipe(c.sink, bulkPipe)
	}
}

// flushLocked writes what sinkLocked held; c.mu is held.
func (c *channel) flushLocked() {
	if len(c.pend) == 0 || c.sink == nil {
		return
	}
	c.writeSinkLocked(c.pend, nil)
	c.pend = c.pend[:0]
}

// writeSinkLocked writes what fits of a then b to the sink and queues the
// rest for the pump; c.mu is held on entry and on return but not during
// the write.
func (c *channel) writeSinkLocked(a, b []byte) {
	c.sinkBusy = true
	c.mu.Unlock()
	n := rawio.TryWrite(c.sink, a, b)
	c.mu.Lock()
	c.sinkBusy = false
	c.consumed += uint32(n)
	short := n < len(a)+len(b)
	if short {
		c.growSinkLocked()
	}
	if n < len(a) {
		c.in.write(a[n:])
		n = len(a)
	}
	c.in.write(b[n-len(a):])
	if short || c.sinkWait {
		c.sinkWait = false
		c.cond.Broadcast()
	}
}
