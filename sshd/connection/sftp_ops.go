package connection

import (
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Open flags (pflags).
const (
	fxfRead   = 0x01
	fxfWrite  = 0x02
	fxfAppend = 0x04
	fxfCreat  = 0x08
	fxfTrunc  = 0x10
	fxfExcl   = 0x20
)

// readdirBatch is how many entries one NAME reply carries, as OpenSSH.
const readdirBatch = 100

// errBadHandle answers requests naming no open handle of the right kind.
var errBadHandle = errors.New("bad handle")

// fileOp answers the requests other than READ, WRITE and EXTENDED.
func (s *sftpServer) fileOp(t byte, id uint32, in *sftpIn) error {
	switch t {
	case fxpOpen:
		return s.open(id, in)
	case fxpOpendir:
		return s.opendir(id, in)
	case fxpClose:
		return s.closeHandle(id, in)
	case fxpReaddir:
		return s.readdir(id, in)
	case fxpLstat, fxpStat, fxpFstat:
		return s.stat(t, id, in)
	case fxpSetstat, fxpFsetstat:
		return s.setstat(t, id, in)
	case fxpRealpath:
		p := in.str()
		return s.checked(id, in, func() error { return s.name(id, s.realpath(p)) })
	case fxpReadlink:
		p := in.str()
		return s.checked(id, in, func() error {
			target, err := os.Readlink(s.local(p))
			if err != nil {
				return s.statusErr(id, err)
			}
			return s.name(id, target)
		})
	}
	return s.pathOp(t, id, in)
}

// pathOp answers the requests that change names and return a status.
func (s *sftpServer) pathOp(t byte, id uint32, in *sftpIn) error {
	var err error
	switch t {
	case fxpRemove:
		p := in.str()
		err = s.unlessBad(in, func() error { return syscall.Unlink(s.local(p)) })
	case fxpRmdir:
		p := in.str()
		err = s.unlessBad(in, func() error { return syscall.Rmdir(s.local(p)) })
	case fxpMkdir:
		p, a := in.str(), in.attrs()
		mode := fs.FileMode(0o777)
		if a.flags&attrPermissions != 0 {
			mode = fs.FileMode(a.perm & 0o777)
		}
		err = s.unlessBad(in, func() error { return os.Mkdir(s.local(p), mode) })
	case fxpRename:
		from, to := in.str(), in.str()
		err = s.unlessBad(in, func() error { return renameNoReplace(s.local(from), s.local(to)) })
	case fxpSymlink:
		// OpenSSH's order, which the draft reverses: target, then link.
		target, link := in.str(), in.str()
		err = s.unlessBad(in, func() error { return os.Symlink(target, s.local(link)) })
	default:
		return s.status(id, fxOpUnsupported, "")
	}
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	return s.statusErr(id, err)
}

// unlessBad runs f unless the request was malformed.
func (s *sftpServer) unlessBad(in *sftpIn, f func() error) error {
	if in.bad {
		return nil
	}
	return f()
}

// checked answers BAD_MESSAGE for a malformed request, else runs f.
func (s *sftpServer) checked(id uint32, in *sftpIn, f func() error) error {
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	return f()
}

// renameNoReplace is version 3's RENAME: an existing target is an error.
func renameNoReplace(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EEXIST}
	}
	return os.Rename(from, to)
}

func (s *sftpServer) open(id uint32, in *sftpIn) error {
	p, pflags, a := in.str(), in.u32(), in.attrs()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	flags := os.O_RDONLY
	switch {
	case pflags&fxfRead != 0 && pflags&fxfWrite != 0:
		flags = os.O_RDWR
	case pflags&fxfWrite != 0:
		flags = os.O_WRONLY
	}
	for _, f := range [...][2]int{{fxfAppend, os.O_APPEND}, {fxfCreat, os.O_CREATE}, {fxfTrunc, os.O_TRUNC}, {fxfExcl, os.O_EXCL}} {
		if pflags&uint32(f[0]) != 0 {
			flags |= f[1]
		}
	}
	mode := fs.FileMode(0o666)
	if a.flags&attrPermissions != 0 {
		mode = fs.FileMode(a.perm & 0o777)
	}
	if len(s.handles) >= sftpMaxHandles {
		return s.status(id, fxFailure, "too many open files")
	}
	f, err := os.OpenFile(s.local(p), flags, mode)
	if err != nil {
		return s.statusErr(id, err)
	}
	return s.handleReply(id, &sftpHandle{f: f, append: pflags&fxfAppend != 0})
}

func (s *sftpServer) opendir(id uint32, in *sftpIn) error {
	p := in.str()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	if len(s.handles) >= sftpMaxHandles {
		return s.status(id, fxFailure, "too many open files")
	}
	f, err := os.Open(s.local(p))
	if err != nil {
		return s.statusErr(id, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		if err == nil {
			err = syscall.ENOTDIR
		}
		return s.statusErr(id, err)
	}
	return s.handleReply(id, &sftpHandle{f: f, dir: true})
}

// handleReply registers h and answers HANDLE.
func (s *sftpServer) handleReply(id uint32, h *sftpHandle) error {
	b := s.start(fxpHandle, id)
	b = appendSFTPString(b, s.addHandle(h))
	return s.finish(b)
}

func (s *sftpServer) closeHandle(id uint32, in *sftpIn) error {
	hb := in.bytes()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	h := s.handles[string(hb)]
	if h == nil {
		return s.status(id, fxFailure, errBadHandle.Error())
	}
	delete(s.handles, string(hb))
	return s.statusErr(id, h.f.Close())
}

func (s *sftpServer) readdir(id uint32, in *sftpIn) error {
	hb := in.bytes()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	h := s.handles[string(hb)]
	if h == nil || !h.dir {
		return s.status(id, fxFailure, errBadHandle.Error())
	}
	if h.eof {
		return s.status(id, fxEOF, "")
	}
	ents, err := h.f.ReadDir(readdirBatch)
	if len(ents) == 0 {
		h.eof = err == nil || err == io.EOF
		if h.eof {
			return s.status(id, fxEOF, "")
		}
		return s.statusErr(id, err)
	}
	b := s.start(fxpName, id)
	count := len(b)
	b = binary.BigEndian.AppendUint32(b, 0)
	n, now := 0, time.Now()
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // removed since it was listed
		}
		a := attrsOf(fi)
		b = appendSFTPString(b, e.Name())
		b = appendSFTPString(b, s.longName(e.Name(), a, now))
		b = appendAttrs(b, a)
		n++
	}
	binary.BigEndian.PutUint32(b[count:], uint32(n))
	return s.finish(b)
}

func (s *sftpServer) stat(t byte, id uint32, in *sftpIn) error {
	arg := in.bytes()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	var fi fs.FileInfo
	var err error
	switch t {
	case fxpLstat:
		fi, err = os.Lstat(s.local(string(arg)))
	case fxpStat:
		fi, err = os.Stat(s.local(string(arg)))
	default:
		h := s.handles[string(arg)]
		if h == nil {
			return s.status(id, fxFailure, errBadHandle.Error())
		}
		fi, err = h.f.Stat()
	}
	if err != nil {
		return s.statusErr(id, err)
	}
	b := s.start(fxpAttrs, id)
	return s.finish(appendAttrs(b, attrsOf(fi)))
}

// setstat applies ATTRS to a path or handle: size, permissions, times,
// then owner, stopping at the first failure, as OpenSSH's sftp-server.
func (s *sftpServer) setstat(t byte, id uint32, in *sftpIn) error {
	arg, a := in.bytes(), in.attrs()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	var f *os.File
	if t == fxpFsetstat {
		h := s.handles[string(arg)]
		if h == nil {
			return s.status(id, fxFailure, errBadHandle.Error())
		}
		f = h.f
	}
	return s.statusErr(id, applyAttrs(s.local(string(arg)), f, a))
}

func applyAttrs(path string, f *os.File, a sftpAttrs) error {
	var err error
	if a.flags&attrSize != 0 {
		if a.size > 1<<63-1 {
			return os.ErrInvalid
		}
		err = ifFile(f, func() error { return f.Truncate(int64(a.size)) }, func() error { return os.Truncate(path, int64(a.size)) })
	}
	if err == nil && a.flags&attrPermissions != 0 {
		mode := fs.FileMode(a.perm&0o777) | goModeBits(a.perm)
		err = ifFile(f, func() error { return f.Chmod(mode) }, func() error { return os.Chmod(path, mode) })
	}
	if err == nil && a.flags&attrACModTime != 0 {
		at, mt := time.Unix(int64(a.atime), 0), time.Unix(int64(a.mtime), 0)
		err = ifFile(f, func() error { return futimes(f, at, mt) }, func() error { return os.Chtimes(path, at, mt) })
	}
	if err == nil && a.flags&attrUIDGID != 0 {
		uid, gid := int(a.uid), int(a.gid)
		err = ifFile(f, func() error { return f.Chown(uid, gid) }, func() error { return os.Chown(path, uid, gid) })
	}
	return err
}

func ifFile(f *os.File, onFile, onPath func() error) error {
	if f != nil {
		return onFile()
	}
	return onPath()
}

// futimes sets an open file's times (the file may have been renamed
// since it was opened, so its name will not do).
func futimes(f *os.File, at, mt time.Time) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	tv := []unix.Timeval{unix.NsecToTimeval(at.UnixNano()), unix.NsecToTimeval(mt.UnixNano())}
	if cerr := rc.Control(func(fd uintptr) { err = unix.Futimes(int(fd), tv) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.PathError{Op: "futimes", Path: f.Name(), Err: err}
	}
	return nil
}

// goModeBits converts setuid, setgid and sticky to FileMode bits.
func goModeBits(perm uint32) fs.FileMode {
	var m fs.FileMode
	if perm&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if perm&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if perm&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// realpath makes p absolute and clean (lexically, as pkg/sftp did).
func (s *sftpServer) realpath(p string) string {
	return filepath.Clean(s.local(p))
}

// name answers NAME with one entry and empty attributes.
func (s *sftpServer) name(id uint32, p string) error {
	b := s.start(fxpName, id)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = appendSFTPString(b, p)
	b = appendSFTPString(b, p)
	b = binary.BigEndian.AppendUint32(b, 0)
	return s.finish(b)
}
