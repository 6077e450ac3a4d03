package connection

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// The in-process SFTP server speaks protocol version 3
// (draft-ietf-secsh-filexfer-02) with OpenSSH's extensions, as OpenSSH's
// sftp-server does. It runs in one goroutine: requests are answered in
// the order they arrive, and a READ is answered by reading the file
// straight into the outgoing channel buffer, so a downloaded byte is
// copied once in user space (into the transport's packet) on its way
// out. Replies accumulate while more requests are already waiting and go
// out in full channel packets; they are flushed before the server waits
// for input.

// Limits, as OpenSSH's sftp-server (SFTP_MAX_MSG_LENGTH): the largest
// request accepted, and the largest READ answered and WRITE invited
// (announced through limits@openssh.com, which OpenSSH's sftp and scp
// use to size their requests).
const (
	sftpMaxPacket  = 256 << 10
	sftpMaxRead    = sftpMaxPacket - 1024
	sftpMaxHandles = 256
	// sftpMaxHeld bounds the replies held back while requests wait.
	sftpMaxHeld = 32
	// sftpBigPacket is the request size above which the server reads
	// exactly to the end of the request, so no partial request is moved.
	sftpBigPacket = 16 << 10
	sftpInitialIn = 64 << 10
)

// SFTP packet types.
const (
	fxpInit          = 1
	fxpVersion       = 2
	fxpOpen          = 3
	fxpClose         = 4
	fxpRead          = 5
	fxpWrite         = 6
	fxpLstat         = 7
	fxpFstat         = 8
	fxpSetstat       = 9
	fxpFsetstat      = 10
	fxpOpendir       = 11
	fxpReaddir       = 12
	fxpRemove        = 13
	fxpMkdir         = 14
	fxpRmdir         = 15
	fxpRealpath      = 16
	fxpStat          = 17
	fxpRename        = 18
	fxpReadlink      = 19
	fxpSymlink       = 20
	fxpStatus        = 101
	fxpHandle        = 102
	fxpData          = 103
	fxpName          = 104
	fxpAttrs         = 105
	fxpExtended      = 200
	fxpExtendedReply = 201
)

// sftpIO is what the server reads requests from and sends replies to.
type sftpIO interface {
	io.Reader
	// ready reports whether Read would return without waiting.
	ready() bool
	// send writes buf[off:off+n]; the bytes before off are free for the
	// writer's own headers.
	send(buf []byte, off, n int) error
	// chunk is the payload of a full outgoing packet (0: no packets).
	chunk() int
}

// sftpServer is one SFTP session.
type sftpServer struct {
	io      sftpIO
	home    string // relative paths start here
	in      []byte // in[r:w] are received, unprocessed bytes
	r, w    int
	out     sftpOut
	msg     []byte // reply under construction
	handles map[string]*sftpHandle
	seq     uint64 // last handle number
	inited  bool
	names   map[uint64]string // uid/gid to name, for long listings
}

// sftpHandle is an open file or directory.
type sftpHandle struct {
	f      *os.File
	dir    bool
	append bool // SSH_FXF_APPEND: writes go to the end
	eof    bool // directory listing finished
}

func newSFTPServer(t sftpIO, home string) *sftpServer {
	if home == "" || !filepath.IsAbs(home) {
		home = "/"
	}
	return &sftpServer{io: t, home: home, out: sftpOut{io: t},
		handles: map[string]*sftpHandle{}, names: map[uint64]string{}}
}

// errSFTPFraming ends a session whose peer sent an impossible length.
var errSFTPFraming = errors.New("sftp: bad packet length")

// serve answers requests until the input ends (nil) or breaks.
func (s *sftpServer) serve() error {
	defer s.closeAll()
	for {
		p, err := s.next()
		if err != nil {
			ferr := s.out.flush(true)
			if err == io.EOF {
				return ferr
			}
			return err
		}
		if err := s.handle(p); err != nil {
			s.out.flush(true)
			return err
		}
		if err := s.out.settle(); err != nil {
			return err
		}
	}
}

// next returns the next request (type byte onwards), which aliases the
// input buffer until the following call.
func (s *sftpServer) next() ([]byte, error) {
	for {
		need := 4
		if s.w-s.r >= 4 {
			n := binary.BigEndian.Uint32(s.in[s.r:])
			if n == 0 || n > sftpMaxPacket {
				return nil, fmt.Errorf("%w %d", errSFTPFraming, n)
			}
			need = 4 + int(n)
			if s.w-s.r >= need {
				p := s.in[s.r+4 : s.r+need]
				s.r += need
				return p, nil
			}
		}
		if err := s.fill(need); err != nil {
			return nil, err
		}
	}
}

// fill reads more input for a request of need bytes at s.r.
func (s *sftpServer) fill(need int) error {
	if s.r == s.w {
		s.r, s.w = 0, 0
	}
	if s.r+need > len(s.in) {
		s.w = copy(s.in, s.in[s.r:s.w])
		s.r = 0
		if need > len(s.in) {
			nb := make([]byte, max(need, min(2*len(s.in), 4+sftpMaxPacket), sftpInitialIn))
			copy(nb, s.in[:s.w])
			s.in = nb
		}
	}
	end := len(s.in)
	if need > sftpBigPacket {
		end = s.r + need // a big request: stop at its end
	}
	if !s.io.ready() {
		if err := s.out.flush(true); err != nil {
			return err
		}
	}
	k, err := s.io.Read(s.in[s.w:end])
	s.w += k
	if k == 0 && err != nil {
		if err == io.EOF && s.w > s.r {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// handle answers one request.
func (s *sftpServer) handle(p []byte) error {
	if !s.inited {
		if p[0] != fxpInit {
			return fmt.Errorf("sftp: first packet is type %d, not INIT", p[0])
		}
		s.inited = true
		return s.version()
	}
	in := sftpIn{b: p[1:]}
	id := in.u32()
	if in.bad {
		return fmt.Errorf("sftp: packet type %d without a request id", p[0])
	}
	switch p[0] {
	case fxpRead:
		return s.read(id, &in)
	case fxpWrite:
		return s.write(id, &in)
	case fxpExtended:
		return s.extended(id, &in)
	}
	return s.fileOp(p[0], id, &in)
}

// version answers INIT with our version and extensions.
func (s *sftpServer) version() error {
	b := append(s.msg[:0], 0, 0, 0, 0, fxpVersion, 0, 0, 0, 3)
	for _, e := range sftpExtensions {
		b = appendSFTPString(b, e[0])
		b = appendSFTPString(b, e[1])
	}
	s.msg = b
	return s.out.put(b)
}

// closeAll closes what the client left open.
func (s *sftpServer) closeAll() {
	for k, h := range s.handles {
		h.f.Close()
		delete(s.handles, k)
	}
}

// addHandle registers h and returns its handle string.
func (s *sftpServer) addHandle(h *sftpHandle) string {
	s.seq++
	name := strconv.FormatUint(s.seq, 10)
	s.handles[name] = h
	return name
}

// local maps a client path to a file system path.
func (s *sftpServer) local(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.home, p)
}

// read answers READ with the data read straight into the reply buffer.
func (s *sftpServer) read(id uint32, in *sftpIn) error {
	hb, off, n := in.bytes(), in.u64(), in.u32()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	h := s.handles[string(hb)]
	if h == nil || h.dir {
		return s.status(id, fxFailure, "bad handle")
	}
	if off > 1<<63-1 {
		return s.status(id, fxEOF, "")
	}
	want := int(min(n, sftpMaxRead))
	const hdr = 13 // length, type, id, data length
	buf, err := s.out.grab(hdr + want)
	if err != nil {
		return err
	}
	k, rerr := h.f.ReadAt(buf[hdr:], int64(off))
	if k == 0 {
		if rerr == nil || rerr == io.EOF {
			return s.status(id, fxEOF, "")
		}
		return s.statusErr(id, rerr)
	}
	binary.BigEndian.PutUint32(buf, uint32(hdr-4+k))
	buf[4] = fxpData
	binary.BigEndian.PutUint32(buf[5:], id)
	binary.BigEndian.PutUint32(buf[9:], uint32(k))
	s.out.commit(hdr + k)
	return nil
}

// write answers WRITE.
func (s *sftpServer) write(id uint32, in *sftpIn) error {
	hb, off, data := in.bytes(), in.u64(), in.bytes()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	h := s.handles[string(hb)]
	if h == nil || h.dir {
		return s.status(id, fxFailure, "bad handle")
	}
	var err error
	switch {
	case h.append:
		_, err = h.f.Write(data)
	case off > 1<<63-1:
		err = os.ErrInvalid
	default:
		_, err = h.f.WriteAt(data, int64(off))
	}
	return s.statusErr(id, err)
}

// sftpOut collects replies. buf[:sftpOutRoom] is room for the channel
// packet header; buf[sftpOutRoom:n] are replies not yet sent.
type sftpOut struct {
	io   sftpIO
	buf  []byte
	n    int
	held int // replies since the last flush
}

const sftpOutRoom = dataHeaderLen

// grab returns n bytes at the end of the pending replies, sending whole
// packets first when the buffer is short; commit keeps what was used.
func (o *sftpOut) grab(n int) ([]byte, error) {
	if o.n == 0 {
		o.n = sftpOutRoom
	}
	if o.n+n > len(o.buf) {
		if err := o.flush(false); err != nil {
			return nil, err
		}
	}
	if o.n+n > len(o.buf) {
		nb := make([]byte, max(o.n+n, 2*len(o.buf), 64<<10))
		if o.buf != nil {
			copy(nb, o.buf[:o.n])
		}
		o.buf = nb
	}
	return o.buf[o.n : o.n+n], nil
}

func (o *sftpOut) commit(n int) {
	o.n += n
	o.held++
}

// put queues a reply whose first four bytes are its length, to be set.
func (o *sftpOut) put(b []byte) error {
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	dst, err := o.grab(len(b))
	if err != nil {
		return err
	}
	copy(dst, b)
	o.commit(len(b))
	return nil
}

// settle sends what fills whole packets, or everything when many
// replies are held, after a request.
func (o *sftpOut) settle() error {
	if c := o.io.chunk(); c > 0 && o.n-sftpOutRoom >= c {
		return o.flush(false)
	}
	if o.held >= sftpMaxHeld {
		return o.flush(true)
	}
	return nil
}

// flush sends the pending replies: all of them, or only whole packets
// with the rest moved to the front.
func (o *sftpOut) flush(all bool) error {
	pending := o.n - sftpOutRoom
	k := pending
	if c := o.io.chunk(); !all && c > 0 {
		k = pending / c * c
	}
	if k <= 0 {
		return nil
	}
	err := o.io.send(o.buf, sftpOutRoom, k)
	rest := copy(o.buf[sftpOutRoom:], o.buf[sftpOutRoom+k:o.n])
	o.n = sftpOutRoom + rest
	o.held = 0
	return err
}
