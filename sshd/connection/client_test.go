package connection

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/perm"
	"github.com/offload/offload/sshd/wire"
)

// client is a minimal SSH connection-layer client for tests, speaking
// to Serve over a memConn pair. It checks the server keeps the rules.
type client struct {
	t        testing.TB
	pc       *memConn
	server   *memConn
	serveErr chan error

	mu      sync.Mutex
	chans   map[uint32]*cchan
	nextID  uint32
	globals chan byte
	replies chan []byte // global replies with their data (when read)
	// incoming receives the channels the server opens (forwarded-tcpip,
	// x11, agent), which the client confirms unless refuseOpens is set.
	incoming    chan incomingChan
	refuseOpens atomic.Bool
	faults      []string
	done        chan struct{}
	silent      atomic.Bool  // ignore the server's global requests
	requests    atomic.Int64 // the server's global requests received
}

// cchan is a client channel.
type cchan struct {
	cl     *client
	id     uint32
	remote uint32
	opened chan error

	mu         sync.Mutex
	cond       sync.Cond
	stdout     bytes.Buffer
	stderr     bytes.Buffer
	sink       io.Writer // when set, stdout goes here instead
	eof        bool
	closed     bool
	sentClose  bool
	sendWin    uint32 // window the server granted us
	maxPacket  uint32 // server's max packet
	recvWin    uint32 // window we granted
	recvMax    uint32
	initWin    uint32
	consumed   uint32
	autoAdjust bool
	replies    chan bool
	exitStatus int // -1 until received
	exitSignal string
	core       bool
	order      []string // "data", "eof", "exit", "close" as received
	wmu        sync.Mutex
	wbuf       []byte
}

func startClient(t testing.TB, cfg *Config, p *perm.Permissions) *client {
	t.Helper()
	return startClientCtx(t, context.Background(), cfg, p)
}

func startClientCtx(t testing.TB, ctx context.Context, cfg *Config, p *perm.Permissions) *client {
	return startClientConn(t, ctx, cfg, p, false)
}

// startClientConn starts Serve on a memConn; plain hides its
// wire.ReadWaiter, so channel data is not batched.
func startClientConn(t testing.TB, ctx context.Context, cfg *Config, p *perm.Permissions, plain bool) *client {
	srv, cli := memPipe()
	c := &client{t: t, pc: cli, server: srv, serveErr: make(chan error, 1),
		chans: map[uint32]*cchan{}, globals: make(chan byte, 16), done: make(chan struct{}),
		replies: make(chan []byte, 64), incoming: make(chan incomingChan, 64)}
	var spc wire.PacketConn = srv
	if plain {
		spc = plainConn{srv}
	}
	go func() { c.serveErr <- Serve(ctx, spc, p, cfg) }()
	go c.loop()
	t.Cleanup(func() { c.pc.Close(); c.wait(t) })
	return c
}

// wait returns Serve's result, failing the test if it takes too long.
func (c *client) wait(t testing.TB) error {
	select {
	case err := <-c.serveErr:
		c.serveErr <- err
		return err
	case <-testenv.Timeout(t):
		t.Fatalf("Serve did not return")
		return nil
	}
}

func (c *client) fault(format string, args ...any) {
	c.mu.Lock()
	c.faults = append(c.faults, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

func (c *client) checkFaults(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.faults {
		t.Errorf("server broke the protocol: %s", f)
	}
}

func (c *client) send(p []byte) {
	c.pc.WritePacket(p)
}

func (c *client) loop() {
	defer close(c.done)
	defer c.closeAll()
	for {
		p, err := c.pc.ReadPacket()
		if err != nil {
			return
		}
		c.dispatch(p)
	}
}

func (c *client) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.chans {
		ch.mu.Lock()
		ch.closed = true
		ch.cond.Broadcast()
		ch.mu.Unlock()
		select {
		case ch.opened <- io.EOF:
		default:
		}
	}
}

func (c *client) dispatch(p []byte) {
	switch p[0] {
	case wire.MsgRequestSuccess, wire.MsgRequestFailure:
		select {
		case c.replies <- append([]byte(nil), p...):
		default:
		}
		c.globals <- p[0]
		return
	case wire.MsgChannelOpen:
		c.accept(p)
		return
	case wire.MsgGlobalRequest:
		r, _ := parseGlobalRequest(p)
		c.requests.Add(1)
		if r.wantReply && !c.silent.Load() {
			c.send([]byte{wire.MsgRequestFailure})
		}
		return
	}
	id, ok := channelID(p)
	c.mu.Lock()
	ch := c.chans[id]
	c.mu.Unlock()
	if !ok || ch == nil {
		c.fault("message %d for unknown client channel %d", p[0], id)
		return
	}
	ch.handle(p)
}

func (ch *cchan) handle(p []byte) {
	r := wire.NewReader(p[5:])
	switch p[0] {
	case wire.MsgChannelOpenConfirm:
		ch.mu.Lock()
		ch.remote, ch.sendWin, ch.maxPacket = r.Uint32("s"), r.Uint32("w"), r.Uint32("m")
		ch.mu.Unlock()
		ch.opened <- nil
	case wire.MsgChannelOpenFailure:
		reason := r.Uint32("reason")
		ch.opened <- fmt.Errorf("open failed: %d %s", reason, r.String("desc"))
	case wire.MsgChannelWindowAdjust:
		ch.mu.Lock()
		ch.sendWin += r.Uint32("n")
		ch.cond.Broadcast()
		ch.mu.Unlock()
	case wire.MsgChannelData, wire.MsgChannelExtendedData:
		ch.data(p)
	case wire.MsgChannelEOF:
		ch.event("eof", func() { ch.eof = true })
	case wire.MsgChannelClose:
		ch.event("close", func() { ch.closed = true })
		ch.closeBack()
	case wire.MsgChannelRequest:
		ch.request(p)
	case wire.MsgChannelSuccess, wire.MsgChannelFailure:
		ch.replies <- p[0] == wire.MsgChannelSuccess
	}
}

func (ch *cchan) event(name string, f func()) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		ch.cl.fault("%s after CLOSE on channel %d", name, ch.id)
	}
	ch.order = append(ch.order, name)
	f()
	ch.cond.Broadcast()
}

// closeBack answers the server's CLOSE. The send happens under ch.mu so
// that sendEOF cannot slip an EOF in after it.
func (ch *cchan) closeBack() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !ch.sentClose {
		ch.sentClose = true
		ch.cl.send(appendChannelMsg(nil, wire.MsgChannelClose, ch.remote))
	}
}

func (ch *cchan) data(p []byte) {
	d, ext, ok := parseData(p)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	switch {
	case !ok:
		ch.cl.fault("malformed data")
	case uint32(len(d)) > ch.recvWin:
		ch.cl.fault("server sent %d bytes with window %d", len(d), ch.recvWin)
	case uint32(len(d)) > ch.recvMax:
		ch.cl.fault("server sent %d bytes with max packet %d", len(d), ch.recvMax)
	case ch.eof || ch.closed:
		ch.cl.fault("data after EOF/CLOSE")
	}
	ch.recvWin -= min(uint32(len(d)), ch.recvWin)
	if len(ch.order) == 0 || ch.order[len(ch.order)-1] != "data" {
		ch.order = append(ch.order, "data")
	}
	switch {
	case ext == extendedDataStderr:
		ch.stderr.Write(d)
	case ch.sink != nil:
		ch.sink.Write(d)
	default:
		ch.stdout.Write(d)
	}
	ch.consumed += uint32(len(d))
	if ch.autoAdjust && ch.consumed >= ch.initWin/2 {
		ch.recvWin += ch.consumed
		ch.cl.send(appendWindowAdjust(nil, ch.remote, ch.consumed))
		ch.consumed = 0
	}
	ch.cond.Broadcast()
}

func (ch *cchan) request(p []byte) {
	req, err := parseChannelRequest(p)
	if err != nil {
		ch.cl.fault("bad request: %v", err)
		return
	}
	r := wire.NewReader(req.payload)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	switch req.kind {
	case "exit-status":
		ch.exitStatus = int(r.Uint32("status"))
	case "exit-signal":
		ch.exitSignal, ch.core = r.String("sig"), r.Bool("core")
	}
	ch.order = append(ch.order, "exit")
	ch.cond.Broadcast()
}

// open opens a channel of kind with the given window and max packet.
func (c *client) open(kind string, window, maxPacket uint32, extra []byte) (*cchan, error) {
	c.mu.Lock()
	ch := &cchan{cl: c, id: c.nextID, opened: make(chan error, 1), replies: make(chan bool, 64),
		recvWin: window, recvMax: maxPacket, initWin: window, autoAdjust: true, exitStatus: -1}
	ch.cond.L = &ch.mu
	c.chans[ch.id] = ch
	c.nextID++
	c.mu.Unlock()
	b := wire.AppendString([]byte{wire.MsgChannelOpen}, kind)
	b = wire.AppendUint32(b, ch.id)
	b = wire.AppendUint32(b, window)
	b = wire.AppendUint32(b, maxPacket)
	c.send(append(b, extra...))
	select {
	case err := <-ch.opened:
		return ch, err
	case <-c.done:
		return nil, fmt.Errorf("connection closed")
	case <-testenv.Timeout(c.t):
		return nil, fmt.Errorf("open timed out")
	}
}

// incomingChan is a channel the server opened: its type, data and our
// end (nil when refused).
type incomingChan struct {
	kind  string
	extra []byte
	ch    *cchan
}

// accept answers a CHANNEL_OPEN from the server.
func (c *client) accept(p []byte) {
	o, err := parseOpen(p)
	if err != nil {
		c.fault("bad CHANNEL_OPEN from the server: %v", err)
		return
	}
	in := incomingChan{kind: o.kind, extra: append([]byte(nil), o.extra...)}
	if c.refuseOpens.Load() {
		c.send(appendOpenFailure(nil, o.sender, openAdminProhibited, "refused by the test"))
	} else {
		c.mu.Lock()
		ch := &cchan{cl: c, id: c.nextID, remote: o.sender, sendWin: o.window, maxPacket: o.maxPacket,
			opened: make(chan error, 1), replies: make(chan bool, 64), recvWin: 1 << 20, recvMax: 32768,
			initWin: 1 << 20, autoAdjust: true, exitStatus: -1}
		ch.cond.L = &ch.mu
		c.chans[ch.id] = ch
		c.nextID++
		c.mu.Unlock()
		c.send(appendOpenConfirm(nil, o.sender, ch.id, 1<<20, 32768))
		in.ch = ch
	}
	select {
	case c.incoming <- in:
	default:
		c.fault("too many channels opened by the server")
	}
}

// global sends a global request wanting a reply and returns the reply.
func (c *client) global(t testing.TB, name string, payload []byte) []byte {
	t.Helper()
	c.send(append(wire.AppendBool(wire.AppendString([]byte{wire.MsgGlobalRequest}, name), true), payload...))
	select {
	case r := <-c.replies:
		<-c.globals
		return r
	case <-testenv.Timeout(t):
		t.Fatalf("no reply to %s", name)
		return nil
	}
}

func (c *client) session(t testing.TB) *cchan {
	t.Helper()
	ch, err := c.open("session", 1<<20, 32768, nil)
	if err != nil {
		t.Fatalf("open session: %v", err)
	}
	return ch
}

// req sends a channel request and, when wantReply, returns the answer.
func (ch *cchan) req(kind string, wantReply bool, payload []byte) bool {
	b := appendRequestHeader(nil, ch.remote, kind, wantReply)
	ch.cl.send(append(b, payload...))
	if !wantReply {
		return true
	}
	select {
	case ok := <-ch.replies:
		return ok
	case <-testenv.Timeout(ch.cl.t):
		ch.cl.t.Errorf("no reply to %s", kind)
		return false
	}
}

func (ch *cchan) exec(cmd string) bool {
	return ch.req("exec", true, wire.AppendString(nil, cmd))
}

// write sends data, honouring the server's window and max packet.
func (ch *cchan) write(p []byte) error {
	for len(p) > 0 {
		ch.mu.Lock()
		for ch.sendWin == 0 && !ch.closed {
			ch.cond.Wait()
		}
		if ch.closed {
			ch.mu.Unlock()
			return io.ErrClosedPipe
		}
		n := min(uint32(len(p)), ch.sendWin, ch.maxPacket)
		ch.sendWin -= n
		ch.mu.Unlock()
		ch.wmu.Lock()
		ch.wbuf = wire.AppendBytes(appendChannelMsg(ch.wbuf[:0], wire.MsgChannelData, ch.remote), p[:n])
		ch.cl.send(ch.wbuf)
		ch.wmu.Unlock()
		p = p[n:]
	}
	return nil
}

// sendEOF sends EOF unless the channel is already closed from this side
// (the program may finish, and the server close, before the test gets here;
// a real client sends nothing after its CLOSE either).
func (ch *cchan) sendEOF() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !ch.sentClose {
		ch.cl.send(appendChannelMsg(nil, wire.MsgChannelEOF, ch.remote))
	}
}

// waitClosed waits for the server's CLOSE, until shortly before the test
// binary's deadline: a program's end is an event, and a login shell's
// start-up files can take a minute on a loaded machine.
func (ch *cchan) waitClosed(t testing.TB) {
	t.Helper()
	deadline := time.AfterFunc(time.Until(testenv.StartupDeadline(t)), func() {
		ch.mu.Lock()
		ch.closed = true
		ch.order = append(ch.order, "TIMEOUT")
		ch.cond.Broadcast()
		ch.mu.Unlock()
	})
	defer deadline.Stop()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for !ch.closed {
		ch.cond.Wait()
	}
	if n := len(ch.order); n > 0 && ch.order[n-1] == "TIMEOUT" {
		t.Fatalf("channel %d: no CLOSE from server (events %v)", ch.id, ch.order)
	}
}

// Reader wraps the channel's stdout for pkg/sftp and io tests.
func (ch *cchan) Read(p []byte) (int, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for ch.stdout.Len() == 0 && !ch.eof && !ch.closed {
		ch.cond.Wait()
	}
	if ch.stdout.Len() == 0 {
		return 0, io.EOF
	}
	return ch.stdout.Read(p)
}

func (ch *cchan) Write(p []byte) (int, error) {
	if err := ch.write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (ch *cchan) Close() error { ch.sendEOF(); return nil }

func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
