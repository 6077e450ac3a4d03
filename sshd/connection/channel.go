package connection

import (
	"context"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/offload/offload/sshd/wire"
)

// channel is one multiplexed channel. The read loop delivers inbound
// messages; handler goroutines read, write and send requests.
type channel struct {
	m      *mux
	id     uint32 // our channel number
	remote uint32 // the peer's channel number
	kind   string
	ctx    context.Context // ends when the channel or connection dies
	cancel context.CancelFunc

	mu         sync.Mutex
	cond       sync.Cond
	in         ring
	sink       syscall.RawConn // see sink.go
	readerIdle bool            // a reader waits in Read
	sinkBusy   bool            // the read loop is writing to the sink
	sinkWait   bool            // someone waits for sinkBusy to clear
	sinkGrown  bool            // the sink pipe was asked to grow (once)
	win        autoWindow      // the receive window's size and growth
	pend       []byte          // data held for one write to the sink (sink.go)
	inWindow   uint32          // bytes the peer may still send
	consumed   uint32          // bytes read since the last WINDOW_ADJUST
	eofIn      bool
	dead       bool // peer closed or connection gone
	outWindow  uint32
	pace       *pacer // nil unless Config.PaceSends (pacing.go)
	peerMax    uint32

	sendMu    sync.RWMutex // data senders hold R; EOF/CLOSE hold W
	sentEOF   bool
	sentClose bool
	closing   atomic.Bool // sentClose, readable without sendMu
	gotClose  bool        // read loop only

	ctlMu  sync.Mutex // guards ctlBuf
	ctlBuf []byte

	reqs     chan requestMsg
	reqBytes atomic.Int64 // payload bytes queued in reqs
	reqsOnce sync.Once

	stdout, stderr dataWriter

	resize atomic.Pointer[os.File] // the pty master while a program runs on it (pty.go)

	confirmed     chan error    // for channels we open: the peer's answer (open.go)
	confirmedSent atomic.Bool   // we confirmed the peer's open
	timeout       atomic.Int64  // ChannelTimeout (a time.Duration) for this kind, 0 for none (timeout.go)
	activity      atomic.Uint32 // data messages either way, when counting
	counting      bool          // some ChannelTimeout applies
}

func newChannel(m *mux, id uint32, o openMsg) *channel {
	c := &channel{m: m, id: id, remote: o.sender, kind: o.kind, inWindow: m.cfg.window,
		outWindow: o.window, peerMax: min(o.maxPacket, sendChunk),
		win: autoWindow{size: m.cfg.window, max: max(m.cfg.window, m.cfg.windowMax)}}
	if m.cfg.PaceSends { // an OpenSSH client
		c.pace = newPacer(o.window)
		c.win.rate = openSSHWindowRate
	}
	c.cond.L = &c.mu
	c.timeout.Store(int64(m.cfg.channelTimeout(o.kind, "")))
	c.counting = len(m.cfg.ChannelTimeouts) > 0
	c.ctx, c.cancel = context.WithCancel(m.ctx)
	c.stdout = dataWriter{c: c}
	c.stderr = dataWriter{c: c, ext: extendedDataStderr}
	return c
}

// Read reads channel data from the peer; it returns io.EOF after the
// peer's EOF or when the channel is closed.
func (c *channel) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	for (c.in.len() == 0 && !c.eofIn && !c.dead) || c.sinkBusy {
		c.readerIdle = true
		c.sinkWait = c.sinkWait || c.sinkBusy
		c.cond.Wait()
	}
	c.readerIdle = false
	if c.in.len() == 0 {
		c.mu.Unlock()
		return 0, io.EOF
	}
	n := c.in.read(p)
	c.consumed += uint32(n)
	adj := c.takeAdjustLocked()
	c.mu.Unlock()
	if adj > 0 {
		c.sendAdjust(adj)
	}
	return n, nil
}

// takeAdjustLocked returns the window to give back once half the window
// has been consumed, with what the window grows by (autowindow.go).
func (c *channel) takeAdjustLocked() uint32 {
	if c.consumed < c.win.size/2 || c.dead {
		return 0
	}
	adj := c.consumed
	if c.win.size < c.win.max {
		now, rtt := nowNano(), c.m.rtt.last.Load()
		if grow := c.win.adjusted(adj, now, rtt); grow > 0 {
			adj += grow
			c.m.log.Debug("connection: channel window grows", "channel", c.id, "window", c.win.size, "rtt", time.Duration(rtt))
		}
		c.m.measureRoundTrip(now)
	}
	c.inWindow += adj
	c.consumed = 0
	return adj
}

func (c *channel) sendAdjust(n uint32) {
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	c.ctlBuf = appendWindowAdjust(c.ctlBuf[:0], c.remote, n)
	c.sendControl(c.ctlBuf)
}

// sendControl sends a message that must not follow our CLOSE.
func (c *channel) sendControl(p []byte) error {
	c.sendMu.RLock()
	defer c.sendMu.RUnlock()
	if c.sentClose {
		return ErrClosed
	}
	return c.m.pc.WritePacket(p)
}

// Write sends data to the peer.
func (c *channel) Write(p []byte) (int, error) { return c.stdout.Write(p) }

// ReadFrom sends everything r yields as channel data, without an
// intermediate copy.
func (c *channel) ReadFrom(r io.Reader) (int64, error) { return c.stdout.ReadFrom(r) }

// Close sends EOF and CLOSE.
func (c *channel) Close() error {
	c.CloseWrite()
	c.sendClose()
	return nil
}

// CloseWrite sends EOF once.
func (c *channel) CloseWrite() error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if c.sentEOF || c.sentClose {
		return nil
	}
	c.sentEOF = true
	return c.m.pc.WritePacket(appendChannelMsg(nil, wire.MsgChannelEOF, c.remote))
}

// sendClose sends CLOSE once; later data sends fail.
func (c *channel) sendClose() {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if c.sentClose {
		return
	}
	c.sentClose = true
	c.closing.Store(true)
	c.m.pc.WritePacket(appendChannelMsg(nil, wire.MsgChannelClose, c.remote))
}

// sendRequest sends a channel request without asking for a reply.
func (c *channel) sendRequest(kind string, payload []byte) error {
	b := appendRequestHeader(nil, c.remote, kind, false)
	return c.sendControl(append(b, payload...))
}

// reply answers a channel request that asked for one.
func (c *channel) reply(r requestMsg, ok bool) {
	if !r.wantReply {
		return
	}
	msg := byte(wire.MsgChannelFailure)
	if ok {
		msg = wire.MsgChannelSuccess
	}
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	c.ctlBuf = appendChannelMsg(c.ctlBuf[:0], msg, c.remote)
	c.sendControl(c.ctlBuf)
}

// reserve waits for send window and takes up to n bytes of it.
func (c *channel) reserve(n int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.pace.allow(c.outWindow) == 0 && !c.dead {
		if c.pace != nil {
			c.pace.held(c.outWindow, nowNano(), c.paceValve)
		}
		c.cond.Wait()
	}
	if c.dead {
		return 0, ErrClosed
	}
	k := min(uint32(min(n, math.MaxInt32)), c.pace.allow(c.outWindow), c.peerMax)
	c.outWindow -= k
	if c.pace != nil { // no clock read per send unless pacing
		c.pace.onSend(k, nowNano())
	}
	return int(k), nil
}

// paceValve runs when a paced sender waited paceValve for a window
// adjustment (pacing.go).
func (c *channel) paceValve() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pace.expire(nowNano())
	c.cond.Broadcast()
}

// kill marks the channel dead and wakes everyone waiting on it.
func (c *channel) kill() {
	c.mu.Lock()
	c.dead = true
	c.cond.Broadcast()
	c.mu.Unlock()
	c.cancel()
	c.reqsOnce.Do(func() {
		if c.reqs != nil {
			close(c.reqs)
		}
	})
}

// dataWriter sends DATA (ext 0) or EXTENDED_DATA, reusing one buffer.
type dataWriter struct {
	c   *channel
	ext uint32
	mu  sync.Mutex
	buf []byte
}

func (w *dataWriter) hdrLen() int {
	if w.ext != 0 {
		return extDataHeaderLen
	}
	return dataHeaderLen
}

func (w *dataWriter) init() int {
	if w.buf == nil {
		w.buf = make([]byte, extDataHeaderLen+sendChunk)
	}
	return w.hdrLen()
}

func (w *dataWriter) Write(p []byte) (int, error) {
	return w.writeBuffers(p, nil)
}

// writeBuffers sends a then b as one stream, packing both into the same
// packets (an SFTP header and its payload travel together).
func (w *dataWriter) writeBuffers(a, b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	hdr := w.init()
	done, fill := 0, 0
	for _, p := range [2][]byte{a, b} {
		for len(p) > 0 {
			k := copy(w.buf[hdr+fill:], p)
			fill += k
			p = p[k:]
			if fill == len(w.buf)-hdr {
				if err := w.send(hdr, fill); err != nil {
					return done, err
				}
				done += fill
				fill = 0
			}
		}
	}
	if fill > 0 {
		if err := w.send(hdr, fill); err != nil {
			return done, err
		}
	}
	return len(a) + len(b), nil
}

// ReadFrom reads from r straight into the packet buffer. Once a read
// fills the buffer — the program writes faster than the peer drains —
// the buffer grows to bulkChunk and a pipe behind r to bulkPipe, so a
// bulk transfer takes a quarter of the reads and the program blocks on a
// full pipe less often.
func (w *dataWriter) ReadFrom(r io.Reader) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	hdr := w.init()
	var total int64
	for {
		k, err := r.Read(w.buf[hdr:])
		if k == len(w.buf)-hdr && k < bulkChunk { // full, not yet grown
			w.grow(r)
		}
		if k > 0 {
			if serr := w.send(hdr, k); serr != nil {
				return total, serr
			}
			total += int64(k)
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// grow moves the buffer's data (at its header offset) to one of
// bulkChunk bytes and enlarges a pipe behind r; a pipe the kernel will
// not enlarge keeps its size.
func (w *dataWriter) grow(r io.Reader) {
	b := make([]byte, extDataHeaderLen+bulkChunk)
	copy(b, w.buf)
	w.buf = b
	if p, ok := r.(interface{ GrowPipe(int) error }); ok {
		p.GrowPipe(bulkPipe)
	}
}

// send transmits buf[off:off+n] in packets the window and the peer's
// maximum allow, writing each header in place before its payload.
func (w *dataWriter) send(off, n int) error { return w.sendIn(w.buf, off, n) }

// sendIn is send for a caller's buffer, which has header room before off.
func (w *dataWriter) sendIn(buf []byte, off, n int) error {
	for n > 0 {
		k, err := w.c.reserve(n)
		if err != nil {
			return err
		}
		start := putDataHeader(buf, off, w.c.remote, w.ext, k)
		if err := w.c.sendData(buf[start : off+k]); err != nil {
			return err
		}
		off += k
		n -= k
	}
	return nil
}

func (c *channel) sendData(p []byte) error {
	if c.counting {
		c.activity.Add(1)
	}
	c.sendMu.RLock()
	defer c.sendMu.RUnlock()
	if c.sentEOF || c.sentClose {
		return ErrClosed
	}
	return c.m.pc.WritePacket(p)
}

// stderrWriter returns the writer for extended data 1.
func (c *channel) stderrWriter() io.Writer { return &c.stderr }
