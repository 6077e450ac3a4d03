package sftp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/user"
	"strconv"
	"syscall"
	"time"
)

// SFTP status codes.
const (
	fxOK               = 0
	fxEOF              = 1
	fxNoSuchFile       = 2
	fxPermissionDenied = 3
	fxFailure          = 4
	fxBadMessage       = 5
	fxOpUnsupported    = 8
)

// ATTRS flags.
const (
	attrSize        = 0x1
	attrUIDGID      = 0x2
	attrPermissions = 0x4
	attrACModTime   = 0x8
	attrExtended    = 0x80000000
)

// reader reads request fields; a short field sets bad and yields zeros.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) fail() { r.bad, r.b = true, nil }

func (r *reader) u32() uint32 {
	if len(r.b) < 4 {
		r.fail()
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.fail()
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// bytes reads a string field, aliasing the request.
func (r *reader) bytes() []byte {
	n := r.u32()
	if r.bad || uint64(n) > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string { return string(r.bytes()) }

// attrs is the ATTRS structure of version 3.
type attrs struct {
	flags        uint32
	size         uint64
	uid, gid     uint32
	perm         uint32 // st_mode: type and permission bits
	atime, mtime uint32
	nlink        uint64 // not on the wire; for long listings
}

// attrs reads ATTRS; extended attributes are skipped.
func (r *reader) attrs() attrs {
	a := attrs{flags: r.u32()}
	if a.flags&attrSize != 0 {
		a.size = r.u64()
	}
	if a.flags&attrUIDGID != 0 {
		a.uid, a.gid = r.u32(), r.u32()
	}
	if a.flags&attrPermissions != 0 {
		a.perm = r.u32()
	}
	if a.flags&attrACModTime != 0 {
		a.atime, a.mtime = r.u32(), r.u32()
	}
	if a.flags&attrExtended != 0 {
		for n := r.u32(); n > 0 && !r.bad; n-- {
			r.bytes()
			r.bytes()
		}
	}
	return a
}

func appendAttrs(b []byte, a attrs) []byte {
	b = binary.BigEndian.AppendUint32(b, a.flags&^attrExtended)
	if a.flags&attrSize != 0 {
		b = binary.BigEndian.AppendUint64(b, a.size)
	}
	if a.flags&attrUIDGID != 0 {
		b = binary.BigEndian.AppendUint32(b, a.uid)
		b = binary.BigEndian.AppendUint32(b, a.gid)
	}
	if a.flags&attrPermissions != 0 {
		b = binary.BigEndian.AppendUint32(b, a.perm)
	}
	if a.flags&attrACModTime != 0 {
		b = binary.BigEndian.AppendUint32(b, a.atime)
		b = binary.BigEndian.AppendUint32(b, a.mtime)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// attrsOf describes a file as stat(2) did.
func attrsOf(fi fs.FileInfo) attrs {
	a := attrs{flags: attrSize | attrUIDGID | attrPermissions | attrACModTime,
		size: uint64(fi.Size()), mtime: uint32(fi.ModTime().Unix()), nlink: 1}
	a.atime = a.mtime
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		a.uid, a.gid, a.perm = st.Uid, st.Gid, uint32(st.Mode)
		a.nlink = uint64(st.Nlink)
		if at := statAtime(st); at != 0 {
			a.atime = at
		}
		return a
	}
	a.perm = unixMode(fi.Mode())
	return a
}

// Unix file type bits.
const (
	sIFMT   = 0o170000
	sIFSOCK = 0o140000
	sIFLNK  = 0o120000
	sIFREG  = 0o100000
	sIFBLK  = 0o060000
	sIFDIR  = 0o040000
	sIFCHR  = 0o020000
	sIFIFO  = 0o010000
)

// unixMode converts a FileMode to st_mode bits.
func unixMode(m fs.FileMode) uint32 {
	v := uint32(m.Perm())
	switch {
	case m.IsDir():
		v |= sIFDIR
	case m&fs.ModeSymlink != 0:
		v |= sIFLNK
	case m&fs.ModeNamedPipe != 0:
		v |= sIFIFO
	case m&fs.ModeSocket != 0:
		v |= sIFSOCK
	case m&fs.ModeCharDevice != 0:
		v |= sIFCHR
	case m&fs.ModeDevice != 0:
		v |= sIFBLK
	default:
		v |= sIFREG
	}
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return v
}

// modeString is ls -l's mode column for st_mode bits.
func modeString(m uint32) string {
	b := []byte("?rwxrwxrwx")
	switch m & sIFMT {
	case sIFREG:
		b[0] = '-'
	case sIFDIR:
		b[0] = 'd'
	case sIFLNK:
		b[0] = 'l'
	case sIFCHR:
		b[0] = 'c'
	case sIFBLK:
		b[0] = 'b'
	case sIFIFO:
		b[0] = 'p'
	case sIFSOCK:
		b[0] = 's'
	}
	for i := 0; i < 9; i++ {
		if m&(1<<(8-i)) == 0 {
			b[1+i] = '-'
		}
	}
	for _, sp := range [3]struct {
		bit  uint32
		pos  int
		x, n byte // with and without the execute bit
	}{{0o4000, 3, 's', 'S'}, {0o2000, 6, 's', 'S'}, {0o1000, 9, 't', 'T'}} {
		if m&sp.bit != 0 {
			if b[sp.pos] == '-' {
				b[sp.pos] = sp.n
			} else {
				b[sp.pos] = sp.x
			}
		}
	}
	return string(b)
}

// longName is the ls -l line OpenSSH's sftp prints for "ls -l".
func (s *Server) longName(name string, a attrs, now time.Time) string {
	t := time.Unix(int64(a.mtime), 0)
	when := t.Format("Jan _2 15:04")
	if d := now.Sub(t); d > 182*24*time.Hour || d < -182*24*time.Hour {
		when = t.Format("Jan _2  2006")
	}
	return fmt.Sprintf("%s %4d %-8s %-8s %8d %s %s", modeString(a.perm), a.nlink,
		s.idName(uint64(a.uid), user.LookupId), s.idName(uint64(a.gid)|1<<32, lookupGroup), a.size, when, name)
}

func lookupGroup(id string) (*user.User, error) {
	g, err := user.LookupGroupId(id)
	if err != nil {
		return nil, err
	}
	return &user.User{Username: g.Name}, nil
}

// idName names a uid (or a gid, marked by bit 32), caching the answer.
func (s *Server) idName(key uint64, lookup func(string) (*user.User, error)) string {
	if n, ok := s.names[key]; ok {
		return n
	}
	id := strconv.FormatUint(key&(1<<32-1), 10)
	n := id
	if u, err := lookup(id); err == nil && u.Username != "" {
		n = u.Username
	}
	if len(s.names) < 1024 {
		s.names[key] = n
	}
	return n
}

// statusOf maps an error to a status code and message.
func statusOf(err error) (uint32, string) {
	if err == nil {
		return fxOK, "Success"
	}
	return errStatus(err)
}

// errStatus is statusOf for a failure (apart, as errors.As makes its
// target escape). Codes follow OpenSSH's errno_to_portable; a failure's
// message names the system error, which OpenSSH's "Failure" does not.
func errStatus(err error) (uint32, string) {
	var errno syscall.Errno
	switch {
	case errors.Is(err, io.EOF):
		return fxEOF, "End of file"
	case !errors.As(err, &errno):
		if errors.Is(err, fs.ErrNotExist) {
			return fxNoSuchFile, "No such file"
		}
		if errors.Is(err, fs.ErrPermission) {
			return fxPermissionDenied, "Permission denied"
		}
		return fxFailure, "Failure"
	}
	switch errno {
	case syscall.ENOENT, syscall.ENOTDIR, syscall.EBADF, syscall.ELOOP:
		return fxNoSuchFile, "No such file"
	case syscall.EPERM, syscall.EACCES, syscall.EFAULT:
		return fxPermissionDenied, "Permission denied"
	case syscall.ENAMETOOLONG, syscall.EINVAL:
		return fxBadMessage, "Bad message"
	case syscall.ENOSYS:
		return fxOpUnsupported, "Operation unsupported"
	}
	return fxFailure, errno.Error()
}

// status queues STATUS with code and message.
func (s *Server) status(id, code uint32, msg string) error {
	if msg == "" {
		msg = statusText(code)
	}
	b := s.start(fxpStatus, id)
	b = binary.BigEndian.AppendUint32(b, code)
	b = appendString(b, msg)
	b = appendString(b, "")
	return s.finish(b)
}

func statusText(code uint32) string {
	switch code {
	case fxOK:
		return "Success"
	case fxEOF:
		return "End of file"
	case fxNoSuchFile:
		return "No such file"
	case fxPermissionDenied:
		return "Permission denied"
	case fxBadMessage:
		return "Bad message"
	case fxOpUnsupported:
		return "Operation unsupported"
	}
	return "Failure"
}

// statusErr queues STATUS for the outcome err.
func (s *Server) statusErr(id uint32, err error) error {
	code, msg := statusOf(err)
	return s.status(id, code, msg)
}

// start begins a reply: room for its length, type and id.
func (s *Server) start(t byte, id uint32) []byte {
	return binary.BigEndian.AppendUint32(append(s.msg[:0], 0, 0, 0, 0, t), id)
}

// finish queues the reply start began.
func (s *Server) finish(b []byte) error {
	s.msg = b
	return s.out.put(b)
}
