package sftp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strconv"
)

// Limits, as OpenSSH's sftp-server (SFTP_MAX_MSG_LENGTH): the largest
// request accepted, and the largest READ answered and WRITE invited
// (announced through limits@openssh.com, which OpenSSH's sftp and scp
// use to size their requests).
const (
	maxPacket  = 256 << 10
	maxRead    = maxPacket - 1024
	maxHandles = 256
	// maxHeld bounds the replies held back while requests wait.
	maxHeld = 32
	// bigPacket is the request size above which the server reads exactly
	// to the end of the request, so no partial request is moved.
	bigPacket = 16 << 10
	initialIn = 64 << 10
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

// Channel carries a session's byte stream: requests are read from it,
// replies written to it.
type Channel interface {
	io.Reader
	io.Writer
}

// Buffered is an optional interface of a Channel. Buffered reports
// whether Read would return without waiting; while it does, the server
// holds replies back and sends them in full packets.
type Buffered interface {
	Buffered() bool
}

// PacketWriter is an optional interface of a Channel that sends data in
// packets, such as an SSH channel: the server gives it whole buffers with
// room for the packet headers, so a reply is copied once, into the packet.
type PacketWriter interface {
	// PacketSize is the payload of a full packet (0: no preference).
	PacketSize() int
	// Headroom is how many bytes before off WritePackets may use.
	Headroom() int
	// WritePackets sends buf[off:off+n]; buf[:off] is free for headers.
	WritePackets(buf []byte, off, n int) error
}

// Config configures one SFTP session. The zero value serves the host's
// file system from "/" as the running user with the process umask.
type Config struct {
	// Options are internal-sftp's flags (ParseArgs).
	Options
	// User, UID and Home describe the account served: for -d's tokens,
	// "~" and home-directory. Relative paths start in Home (or in
	// Options.StartDir); "/" when Home is empty or missing.
	User string
	UID  uint32
	Home string
	// Root, when set, confines every path to that directory, as a
	// chroot(2) would: "/" is Root, ".." stops there, symbolic links are
	// resolved within it (absolute ones from Root) and never lead out.
	// Home and StartDir are then names within Root. Empty means the
	// host's file system (also the right value after a real chroot).
	Root string
	// Umask masks the mode of created files and directories when
	// Options.Umask is nil; nil leaves it to the process umask.
	Umask *fs.FileMode
	// ClientAddr names the client in log lines.
	ClientAddr string
	// Logger receives the session's messages (Options.LogLevel says
	// which); nil discards them.
	Logger *slog.Logger
}

// Server is one SFTP session (protocol version 3, draft-ietf-secsh-
// filexfer-02, with OpenSSH's extensions). It answers requests in order,
// in the goroutine that calls Serve.
type Server struct {
	ch       Channel
	buffered Buffered
	cfg      Config
	fs       fsys
	cwd      string // relative paths start here
	umask    *fs.FileMode
	log      logger
	denied   []string // per request, its refusal message; "" when allowed
	in       []byte   // in[r:w] are received, unprocessed bytes
	r, w     int
	out      outBuf
	msg      []byte // reply under construction
	req      reader // the request being answered
	handles  map[string]*handle
	seq      uint64 // last handle number
	inited   bool
	names    map[uint64]string // uid/gid to name, for long listings
}

// handle is an open file or directory.
type handle struct {
	f           *os.File
	name        string // as the client named it, for logs
	dir         bool
	append      bool // SSH_FXF_APPEND: writes go to the end
	eof         bool // directory listing finished
	read, wrote uint64
}

// NewServer prepares a session on ch. It fails when Root cannot be
// opened; a start directory that does not exist is logged and ignored,
// as OpenSSH does.
func NewServer(ch Channel, cfg *Config) (*Server, error) { return newServer(ch, cfg, "") }

// newServer is NewServer with relative paths starting in base (the home
// directory when empty) unless -d says otherwise.
func newServer(ch Channel, cfg *Config, base string) (*Server, error) {
	s := &Server{ch: ch, handles: map[string]*handle{}, names: map[uint64]string{}}
	if cfg != nil {
		s.cfg = *cfg
	}
	s.buffered, _ = ch.(Buffered)
	s.out = newOutBuf(ch)
	s.log = newLogger(s.cfg.Logger, &s.cfg.Options)
	s.umask = s.cfg.Options.Umask
	if s.umask == nil {
		s.umask = s.cfg.Umask
	}
	s.denied = make([]string, len(requests))
	for i := range requests {
		s.denied[i] = s.cfg.Options.refusal(&requests[i])
	}
	s.fs = hostFS{}
	if s.cfg.Root != "" && path.Clean(s.cfg.Root) != "/" {
		r, err := openRootFS(s.cfg.Root)
		if err != nil {
			return nil, fmt.Errorf("sftp: root: %w", err)
		}
		s.fs = r
	}
	s.cwd = s.startDir(base)
	return s, nil
}

// startDir is base, or the home directory, or -d's directory, when it
// exists.
func (s *Server) startDir(base string) string {
	cwd := "/"
	if h := s.cfg.Home; path.IsAbs(h) && s.isDir(h) {
		cwd = path.Clean(h)
	}
	if base != "" {
		cwd = base
	}
	if s.cfg.StartDir == "" {
		return cwd
	}
	d, err := expandStartDir(s.cfg.StartDir, s.cfg.Home, s.cfg.User, s.cfg.UID)
	if err == nil && !path.IsAbs(d) {
		d = path.Join(cwd, d)
	}
	if err != nil || !s.isDir(path.Clean(d)) {
		s.log.logf(levelError, "chdir to \"%s\" failed: %v", d, errOr(err, fs.ErrNotExist))
		return cwd
	}
	return path.Clean(d)
}

func errOr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

func (s *Server) isDir(name string) bool {
	fi, err := s.fs.stat(name)
	return err == nil && fi.IsDir()
}

// Serve answers requests on ch until it ends (nil) or breaks.
func Serve(ch Channel, cfg *Config) error {
	s, err := NewServer(ch, cfg)
	if err != nil {
		return err
	}
	return s.Serve()
}

// errFraming ends a session whose peer sent an impossible length.
var errFraming = errors.New("sftp: bad packet length")

// Serve answers requests until the input ends (nil) or breaks, then
// closes what the client left open.
func (s *Server) Serve() error {
	defer s.closeAll()
	s.log.logf(levelInfo, "session opened for local user %s from [%s]", s.cfg.User, s.clientAddr())
	defer s.log.logf(levelInfo, "session closed for local user %s from [%s]", s.cfg.User, s.clientAddr())
	for {
		p, err := s.next()
		if err != nil {
			ferr := s.out.flush(true)
			if err == io.EOF {
				return ferr
			}
			s.log.logf(levelError, "%v", err)
			return err
		}
		if err := s.handle(p); err != nil {
			s.out.flush(true)
			s.log.logf(levelError, "%v", err)
			return err
		}
		if err := s.out.settle(); err != nil {
			return err
		}
	}
}

func (s *Server) clientAddr() string {
	if s.cfg.ClientAddr == "" {
		return "UNKNOWN"
	}
	return s.cfg.ClientAddr
}

// next returns the next request (type byte onwards), which aliases the
// input buffer until the following call.
func (s *Server) next() ([]byte, error) {
	for {
		need := 4
		if s.w-s.r >= 4 {
			n := binary.BigEndian.Uint32(s.in[s.r:])
			if n == 0 || n > maxPacket {
				return nil, fmt.Errorf("%w %d", errFraming, n)
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
func (s *Server) fill(need int) error {
	if s.r == s.w {
		s.r, s.w = 0, 0
	}
	if s.r+need > len(s.in) {
		s.w = copy(s.in, s.in[s.r:s.w])
		s.r = 0
		if need > len(s.in) {
			nb := make([]byte, max(need, min(2*len(s.in), 4+maxPacket), initialIn))
			copy(nb, s.in[:s.w])
			s.in = nb
		}
	}
	end := len(s.in)
	if need > bigPacket {
		end = s.r + need // a big request: stop at its end
	}
	if s.buffered == nil || !s.buffered.Buffered() {
		if err := s.out.flush(true); err != nil {
			return err
		}
	}
	k, err := s.ch.Read(s.in[s.w:end])
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
func (s *Server) handle(p []byte) error {
	if !s.inited {
		if p[0] != fxpInit {
			return fmt.Errorf("sftp: first packet is type %d, not INIT", p[0])
		}
		s.inited = true
		return s.version(p[1:])
	}
	in := &s.req // in the Server: passed through the table, a local would escape
	*in = reader{b: p[1:]}
	id := in.u32()
	if in.bad {
		return fmt.Errorf("sftp: packet type %d without a request id", p[0])
	}
	var i int
	var r *request
	if p[0] == fxpExtended {
		name := in.bytes()
		if in.bad {
			return s.status(id, fxBadMessage, "")
		}
		if i, r = lookupExt(name); r == nil {
			s.log.logf(levelError, "Unknown extended request \"%.100s\"", name)
			return s.status(id, fxOpUnsupported, "")
		}
	} else if i, r = lookupType(p[0]); r == nil {
		s.log.logf(levelError, "Unknown message %d", p[0])
		return s.status(id, fxOpUnsupported, "")
	}
	if why := s.denied[i]; why != "" {
		s.log.logf(levelVerbose, "%s", why)
		return s.status(id, fxPermissionDenied, "")
	}
	return r.serve(s, id, in)
}

// version answers INIT with version 3 and the extensions.
func (s *Server) version(body []byte) error {
	if len(body) >= 4 {
		s.log.logf(levelVerbose, "received client version %d", binary.BigEndian.Uint32(body))
	}
	b := append(s.msg[:0], 0, 0, 0, 0, fxpVersion, 0, 0, 0, 3)
	for i := range requests { // as OpenSSH, disallowed extensions are not announced
		if r := &requests[i]; r.ext != "" && s.denied[i] == "" {
			b = appendString(b, r.ext)
			b = appendString(b, r.version)
		}
	}
	s.msg = b
	return s.out.put(b)
}

// closeAll closes what the client left open, logging each as OpenSSH.
func (s *Server) closeAll() {
	for k, h := range s.handles {
		s.logClose(h, "forced ")
		h.f.Close()
		delete(s.handles, k)
	}
	s.fs.close()
}

// addHandle registers h and returns its handle string.
func (s *Server) addHandle(h *handle) string {
	s.seq++
	name := strconv.FormatUint(s.seq, 10)
	s.handles[name] = h
	return name
}

// abs maps a client path to an absolute, clean name for s.fs.
func (s *Server) abs(p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(s.cwd, p)
}

// unclean is p made absolute without cleaning it: realpath must see each
// ".." after the component it follows, which may be a symbolic link
// ("link/.." is the parent of the link's target, and "missing/.." does
// not exist), as OpenSSH's sftp-server resolves it.
func (s *Server) unclean(p string) string {
	if path.IsAbs(p) {
		return p
	}
	return s.cwd + "/" + p
}

// read answers READ with the data read straight into the reply buffer.
func (s *Server) read(id uint32, in *reader) error {
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
	want := int(min(n, maxRead))
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
	h.read += uint64(k)
	binary.BigEndian.PutUint32(buf, uint32(hdr-4+k))
	buf[4] = fxpData
	binary.BigEndian.PutUint32(buf[5:], id)
	binary.BigEndian.PutUint32(buf[9:], uint32(k))
	s.out.commit(hdr + k)
	return nil
}

// write answers WRITE.
func (s *Server) write(id uint32, in *reader) error {
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
	if err == nil {
		h.wrote += uint64(len(data))
	}
	return s.statusErr(id, err)
}

// outBuf collects replies. buf[:room] is room for the channel's packet
// header; buf[room:n] are replies not yet sent.
type outBuf struct {
	w     io.Writer
	pw    PacketWriter // nil: plain writes
	chunk int
	room  int
	buf   []byte
	n     int
	held  int // replies since the last flush
}

func newOutBuf(ch Channel) outBuf {
	o := outBuf{w: ch}
	if pw, ok := ch.(PacketWriter); ok {
		o.pw, o.chunk, o.room = pw, pw.PacketSize(), pw.Headroom()
	}
	return o
}

// grab returns n bytes at the end of the pending replies, sending whole
// packets first when the buffer is short; commit keeps what was used.
func (o *outBuf) grab(n int) ([]byte, error) {
	if o.n == 0 {
		o.n = o.room
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

func (o *outBuf) commit(n int) {
	o.n += n
	o.held++
}

// put queues a reply whose first four bytes are its length, to be set.
func (o *outBuf) put(b []byte) error {
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
func (o *outBuf) settle() error {
	if o.chunk > 0 && o.n-o.room >= o.chunk {
		return o.flush(false)
	}
	if o.held >= maxHeld {
		return o.flush(true)
	}
	return nil
}

// flush sends the pending replies: all of them, or only whole packets
// with the rest moved to the front.
func (o *outBuf) flush(all bool) error {
	pending := o.n - o.room
	k := pending
	if !all && o.chunk > 0 {
		k = pending / o.chunk * o.chunk
	}
	if k <= 0 {
		return nil
	}
	var err error
	if o.pw != nil {
		err = o.pw.WritePackets(o.buf, o.room, k)
	} else {
		_, err = o.w.Write(o.buf[o.room : o.room+k])
	}
	rest := copy(o.buf[o.room:], o.buf[o.room+k:o.n])
	o.n = o.room + rest
	o.held = 0
	return err
}
