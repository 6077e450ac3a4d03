package ipc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
)

// Limits of one message.
const (
	// MaxMessage bounds a message's payload; larger ones are refused on
	// send and are a protocol error on receipt.
	MaxMessage = 512 << 10
	headerLen  = 5 // type, id
	// maxFiles is the most descriptors a message carries.
	maxFiles = 3 // a session program's stdin, stdout and stderr (TypeSpawn)
	// sockBuf is the socket buffer the privileged side sets on both ends
	// of a pair, so that a MaxMessage fits.
	sockBuf = 2 * (MaxMessage + headerLen)
)

// Errors of a Peer.
var (
	ErrClosed   = errors.New("ipc: connection closed")
	ErrTooLarge = fmt.Errorf("ipc: message larger than %d bytes", MaxMessage)
)

// ProtocolError reports a malformed message from the other process.
type ProtocolError struct {
	Type Type
	Err  error
}

func (e *ProtocolError) Error() string { return fmt.Sprintf("ipc: bad %v message: %v", e.Type, e.Err) }
func (e *ProtocolError) Unwrap() error { return e.Err }

// RemoteError is a failure the other process replied with.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return "ipc: remote: " + e.Msg }

// Message is one received message. Files are descriptors that came with
// it; the handler owns them (it must close those it does not keep).
type Message struct {
	Type    Type
	ID      uint32 // non-zero for a request that wants a reply
	Payload []byte
	Files   []*os.File
}

// Handler handles the requests and notifications a Peer receives. It runs
// on the Peer's read loop: a handler that may wait must hand the work to
// another goroutine (and reply from there).
type Handler func(*Message)

// Peer is one end of a connection between two processes of the server: a
// unix SOCK_SEQPACKET socket, so that each message is one datagram and
// descriptors travel with it. Both ends may send requests; replies are
// matched by id.
type Peer struct {
	c       *net.UnixConn
	rc      syscall.RawConn // c's, for recvmsg and sendmsg
	handler Handler
	wmu     sync.Mutex

	mu      sync.Mutex
	next    uint32
	pending map[uint32]chan reply
	err     error // why the read loop ended
	done    chan struct{}

	rmu      sync.Mutex // held around each read, so Detach knows none is under way
	detached bool       // guarded by rmu: another process reads the socket now (detach.go)
}

type reply struct {
	payload []byte
	err     error
}

// Pair returns a connected pair of sockets for a parent and the child it
// starts: the parent keeps the first, the child gets the second. Both are
// close-on-exec; the caller passes the child's in exec.Cmd.ExtraFiles.
func Pair() (parent, child *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("ipc: socketpair: %w", err)
	}
	for _, fd := range fds {
		growBuffers(fd)
	}
	return os.NewFile(uintptr(fds[0]), "ipc-parent"), os.NewFile(uintptr(fds[1]), "ipc-child"), nil
}

// growBuffers makes room for a MaxMessage in the socket buffers: forced
// where the process may (root), asked for otherwise.
func growBuffers(fd int) {
	for _, opt := range [][2]int{{syscall.SO_SNDBUFFORCE, syscall.SO_SNDBUF}, {syscall.SO_RCVBUFFORCE, syscall.SO_RCVBUF}} {
		if syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, opt[0], sockBuf) != nil {
			syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, opt[1], sockBuf)
		}
	}
}

// NewPeer makes a Peer of the socket f (from Pair, or inherited by a
// child); f is taken over. Start its read loop with Run.
func NewPeer(f *os.File, h Handler) (*Peer, error) {
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("ipc: %w", err)
	}
	uc, ok := fc.(*net.UnixConn)
	if !ok {
		fc.Close()
		return nil, errors.New("ipc: not a unix socket")
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("ipc: %w", err)
	}
	return &Peer{c: uc, rc: rc, handler: h, pending: map[uint32]chan reply{}, done: make(chan struct{})}, nil
}

// Run reads messages until the connection fails or is closed, handing
// requests and notifications to the handler. It returns why it stopped;
// every pending Call fails then.
func (p *Peer) Run() error {
	buf := make([]byte, headerLen+MaxMessage+1)
	oob := make([]byte, syscall.CmsgSpace(4*maxFiles))
	var err error
	for err == nil {
		var m *Message
		if m, err = p.read(buf, oob); err == nil {
			err = p.dispatch(m)
		}
	}
	p.finish(err)
	return err
}

func (p *Peer) finish(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
	for id, ch := range p.pending {
		ch <- reply{err: fmt.Errorf("%w: %w", ErrClosed, err)}
		delete(p.pending, id)
	}
	close(p.done)
	if !p.isDetached() { // a detached socket stays open for the replies still due
		p.c.Close()
	}
}

// Done is closed when Run has returned.
func (p *Peer) Done() <-chan struct{} { return p.done }

// Err is why Run returned (nil while it runs).
func (p *Peer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Close ends the connection; Run returns.
func (p *Peer) Close() error { return p.c.Close() }

func (p *Peer) read(buf, oob []byte) (*Message, error) {
	n, oobn, flags, err := p.recvmsg(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("ipc: read: %w", err)
	}
	files, ferr := parseFiles(oob[:oobn])
	if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 || n == 0 && ferr == nil {
		ferr = errors.Join(ferr, errors.New("truncated or empty message"))
	}
	if n > headerLen+MaxMessage {
		ferr = errors.Join(ferr, ErrTooLarge)
	}
	if n < headerLen || ferr != nil {
		closeFiles(files)
		if ferr == nil {
			ferr = errors.New("short header")
		}
		return nil, &ProtocolError{Type: 0, Err: ferr}
	}
	m := &Message{Type: Type(buf[0]), ID: binary.BigEndian.Uint32(buf[1:5]), Files: files}
	m.Payload = append([]byte(nil), buf[headerLen:n]...)
	clear(buf[:n]) // a password in a decide request must not outlive its use here
	return m, nil
}

func parseFiles(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	var errs error
	for i := range msgs {
		fds, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "ipc-received"))
		}
	}
	if len(files) > maxFiles {
		errs = errors.Join(errs, fmt.Errorf("%d descriptors, at most %d", len(files), maxFiles))
	}
	return files, errs
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// dispatch routes a reply to its Call, and anything else to the handler.
func (p *Peer) dispatch(m *Message) error {
	if m.Type != TypeReply {
		p.handler(m)
		return nil
	}
	closeFiles(m.Files) // replies never carry descriptors
	p.mu.Lock()
	ch, ok := p.pending[m.ID]
	delete(p.pending, m.ID)
	issued := m.ID != 0 && m.ID <= p.next
	p.mu.Unlock()
	switch {
	case ok:
		ch <- decodeReply(m.Payload)
	case !issued:
		return &ProtocolError{Type: TypeReply, Err: fmt.Errorf("reply to request %d, never sent", m.ID)}
	}
	return nil // a reply that came after its Call gave up
}

// Call sends a request and waits for its reply payload, until ctx ends or
// the connection fails.
func (p *Peer) Call(ctx context.Context, t Type, payload []byte, files ...*os.File) ([]byte, error) {
	id, ch, err := p.register()
	if err != nil {
		return nil, err
	}
	if err := p.send(t, id, payload, files); err != nil {
		p.unregister(id)
		return nil, err
	}
	select {
	case r := <-ch:
		return r.payload, r.err
	case <-ctx.Done():
		p.unregister(id)
		return nil, fmt.Errorf("ipc: %v: %w", t, ctx.Err())
	}
}

func (p *Peer) register() (uint32, chan reply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrClosed, p.err)
	}
	p.next++
	if p.next == 0 {
		p.next = 1
	}
	ch := make(chan reply, 1)
	p.pending[p.next] = ch
	return p.next, ch, nil
}

func (p *Peer) unregister(id uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, id)
}

// Notify sends a message that wants no reply.
func (p *Peer) Notify(t Type, payload []byte, files ...*os.File) error {
	return p.send(t, 0, payload, files)
}

// Reply answers request m with payload, or with err when it is not nil.
func (p *Peer) Reply(m *Message, payload []byte, err error) error {
	if m.ID == 0 {
		return nil // a notification
	}
	return p.send(TypeReply, m.ID, encodeReply(payload, err), nil)
}

func (p *Peer) send(t Type, id uint32, payload []byte, files []*os.File) error {
	if len(payload) > MaxMessage {
		return ErrTooLarge
	}
	b := make([]byte, headerLen, headerLen+len(payload))
	b[0] = byte(t)
	binary.BigEndian.PutUint32(b[1:], id)
	b = append(b, payload...)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			// Fd, not SyscallConn: Fd puts a descriptor the os package
			// made non-blocking (an os.Pipe end) back in blocking mode,
			// which a program's stdin, stdout and stderr must be when the
			// receiver starts one with them (the PAM keeper).
			fds[i] = int(f.Fd())
		}
		oob = syscall.UnixRights(fds...)
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	err := p.sendmsg(b, oob)
	clear(b) // the copy of a payload that may hold a password
	if err != nil {
		return fmt.Errorf("ipc: send %v: %w", t, err)
	}
	return nil
}

// A reply is a status byte (0 success, 1 failure), then the payload or
// the failure's text.
func encodeReply(payload []byte, err error) []byte {
	if err != nil {
		msg := err.Error()
		if len(msg) > maxErrorText {
			msg = msg[:maxErrorText]
		}
		return append([]byte{1}, msg...)
	}
	return append([]byte{0}, payload...)
}

const maxErrorText = 1 << 10

func decodeReply(b []byte) reply {
	switch {
	case len(b) == 0:
		return reply{err: &ProtocolError{Type: TypeReply, Err: errors.New("empty reply")}}
	case b[0] == 0:
		return reply{payload: b[1:]}
	case b[0] == 1 && len(b)-1 <= maxErrorText:
		return reply{err: &RemoteError{Msg: string(b[1:])}}
	}
	return reply{err: &ProtocolError{Type: TypeReply, Err: fmt.Errorf("bad reply status %d", b[0])}}
}
