package sftp

import (
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
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

// badOr answers BAD_MESSAGE for a malformed request, else runs f.
func (s *Server) badOr(id uint32, in *reader, f func() error) error {
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	return f()
}

// openFlags converts pflags to open(2) flags.
func openFlags(pflags uint32) int {
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
	return flags
}

// flagNames spells pflags for logs, as OpenSSH.
func flagNames(pflags uint32) string {
	var b []string
	for _, f := range [...]struct {
		bit  uint32
		name string
	}{{fxfRead, "READ"}, {fxfWrite, "WRITE"}, {fxfAppend, "APPEND"}, {fxfCreat, "CREATE"}, {fxfTrunc, "TRUNCATE"}, {fxfExcl, "EXCL"}} {
		if pflags&f.bit != 0 {
			b = append(b, f.name)
		}
	}
	return strings.Join(b, ",")
}

// writes reports whether open flags change the file system.
func writes(flags int) bool {
	return flags&(os.O_WRONLY|os.O_RDWR) != 0 || flags&(os.O_CREATE|os.O_TRUNC) != 0
}

func (s *Server) open(id uint32, in *reader) error {
	p, pflags, a := in.str(), in.u32(), in.attrs()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	flags := openFlags(pflags)
	mode := fs.FileMode(0o666)
	if a.flags&attrPermissions != 0 {
		mode = fileMode(a.perm)
	}
	s.log.logf(levelInfo, "open \"%s\" flags %s mode 0%o", p, flagNames(pflags), unixPerm(mode))
	if s.cfg.ReadOnly && writes(flags) {
		s.log.logf(levelVerbose, "Refusing open request in read-only mode")
		return s.status(id, fxPermissionDenied, "")
	}
	if len(s.handles) >= maxHandles {
		return s.status(id, fxFailure, "too many open files")
	}
	f, err := s.create(s.abs(p), flags, mode)
	if err != nil {
		return s.statusErr(id, err)
	}
	return s.handleReply(id, &handle{f: f, name: p, append: pflags&fxfAppend != 0})
}

// create opens name; a file it creates gets mode masked by the session
// umask exactly, whatever the process umask (which applies only when no
// umask is configured).
func (s *Server) create(name string, flags int, mode fs.FileMode) (*os.File, error) {
	if s.umask == nil || flags&os.O_CREATE == 0 {
		return s.fs.openFile(name, flags, mode)
	}
	want := mode &^ *s.umask
	for range 3 {
		f, err := s.fs.openFile(name, flags|os.O_EXCL, want)
		if err == nil {
			if cerr := f.Chmod(want); cerr != nil {
				s.log.logf(levelError, "chmod \"%s\": %v", name, cerr)
			}
			return f, nil
		}
		if flags&os.O_EXCL != 0 || !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		// It exists: open it as it is, unless it vanished meanwhile.
		f, err = s.fs.openFile(name, flags&^os.O_CREATE, want)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
	}
	return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EAGAIN}
}

func (s *Server) opendir(id uint32, in *reader) error {
	p := in.str()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	s.log.logf(levelInfo, "opendir \"%s\"", p)
	if len(s.handles) >= maxHandles {
		return s.status(id, fxFailure, "too many open files")
	}
	f, err := s.fs.openFile(s.abs(p), os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return s.statusErr(id, err)
	}
	return s.handleReply(id, &handle{f: f, name: p, dir: true})
}

// handleReply registers h and answers HANDLE.
func (s *Server) handleReply(id uint32, h *handle) error {
	b := s.start(fxpHandle, id)
	b = appendString(b, s.addHandle(h))
	return s.finish(b)
}

func (s *Server) closeHandle(id uint32, in *reader) error {
	hb := in.bytes()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	h := s.handles[string(hb)]
	if h == nil {
		return s.status(id, fxFailure, errBadHandle.Error())
	}
	delete(s.handles, string(hb))
	s.logClose(h, "")
	return s.statusErr(id, h.f.Close())
}

// logClose logs a handle's end as OpenSSH's handle_log_close.
func (s *Server) logClose(h *handle, prefix string) {
	if h.dir {
		s.log.logf(levelInfo, "%sclosedir \"%s\"", prefix, h.name)
		return
	}
	s.log.logf(levelInfo, "%sclose \"%s\" bytes read %d written %d", prefix, h.name, h.read, h.wrote)
}

func (s *Server) readdir(id uint32, in *reader) error {
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
		b = appendString(b, e.Name())
		b = appendString(b, s.longName(e.Name(), a, now))
		b = appendAttrs(b, a)
		n++
	}
	binary.BigEndian.PutUint32(b[count:], uint32(n))
	return s.finish(b)
}

func (s *Server) lstat(id uint32, in *reader) error { return s.pathStat(id, in, true) }
func (s *Server) stat(id uint32, in *reader) error  { return s.pathStat(id, in, false) }

func (s *Server) pathStat(id uint32, in *reader, link bool) error {
	p := in.str()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	var fi fs.FileInfo
	var err error
	if link {
		s.log.logf(levelVerbose, "lstat name \"%s\"", p)
		fi, err = s.fs.lstat(s.abs(p))
	} else {
		s.log.logf(levelVerbose, "stat name \"%s\"", p)
		fi, err = s.fs.stat(s.abs(p))
	}
	return s.attrsReply(id, fi, err)
}

func (s *Server) fstat(id uint32, in *reader) error {
	hb := in.bytes()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	h := s.handles[string(hb)]
	if h == nil {
		return s.status(id, fxFailure, errBadHandle.Error())
	}
	fi, err := h.f.Stat()
	return s.attrsReply(id, fi, err)
}

func (s *Server) attrsReply(id uint32, fi fs.FileInfo, err error) error {
	if err != nil {
		return s.statusErr(id, err)
	}
	b := s.start(fxpAttrs, id)
	return s.finish(appendAttrs(b, attrsOf(fi)))
}

func (s *Server) setstat(id uint32, in *reader) error {
	p, a := in.str(), in.attrs()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	return s.statusErr(id, s.applyAttrs(p, pathTarget{s.fs, s.abs(p)}, a))
}

func (s *Server) fsetstat(id uint32, in *reader) error {
	hb, a := in.bytes(), in.attrs()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	h := s.handles[string(hb)]
	if h == nil {
		return s.status(id, fxFailure, errBadHandle.Error())
	}
	return s.statusErr(id, s.applyAttrs(h.name, fileTarget{h.f}, a))
}

// attrTarget is what SETSTAT, FSETSTAT and lsetstat change.
type attrTarget interface {
	truncate(size int64) error
	chmod(mode fs.FileMode) error
	chtimes(at, mt time.Time) error
	chown(uid, gid int) error
}

// applyAttrs applies ATTRS: size, permissions, times, then owner,
// stopping at the first failure, as OpenSSH's sftp-server.
func (s *Server) applyAttrs(name string, t attrTarget, a attrs) error {
	var err error
	if a.flags&attrSize != 0 {
		s.log.logf(levelInfo, "set \"%s\" size %d", name, a.size)
		if a.size > 1<<63-1 {
			return os.ErrInvalid
		}
		err = t.truncate(int64(a.size))
	}
	if err == nil && a.flags&attrPermissions != 0 {
		s.log.logf(levelInfo, "set \"%s\" mode %04o", name, a.perm&0o7777)
		err = t.chmod(fileMode(a.perm))
	}
	if err == nil && a.flags&attrACModTime != 0 {
		if s.log.on(levelInfo) {
			s.log.logf(levelInfo, "set \"%s\" modtime %s", name, time.Unix(int64(a.mtime), 0).Format("20060102-15:04:05"))
		}
		err = t.chtimes(time.Unix(int64(a.atime), 0), time.Unix(int64(a.mtime), 0))
	}
	if err == nil && a.flags&attrUIDGID != 0 {
		s.log.logf(levelInfo, "set \"%s\" owner %d group %d", name, a.uid, a.gid)
		err = t.chown(int(a.uid), int(a.gid))
	}
	return err
}

// pathTarget changes a file by name, following links.
type pathTarget struct {
	fs   fsys
	name string
}

func (t pathTarget) truncate(size int64) error      { return t.fs.truncate(t.name, size) }
func (t pathTarget) chmod(mode fs.FileMode) error   { return t.fs.chmod(t.name, mode) }
func (t pathTarget) chtimes(at, mt time.Time) error { return t.fs.chtimes(t.name, at, mt) }
func (t pathTarget) chown(uid, gid int) error       { return t.fs.chown(t.name, uid, gid) }

// fileTarget changes an open file (which may have been renamed since).
type fileTarget struct{ f *os.File }

func (t fileTarget) truncate(size int64) error      { return t.f.Truncate(size) }
func (t fileTarget) chmod(mode fs.FileMode) error   { return t.f.Chmod(mode) }
func (t fileTarget) chtimes(at, mt time.Time) error { return futimes(t.f, at, mt) }
func (t fileTarget) chown(uid, gid int) error       { return t.f.Chown(uid, gid) }

// linkTarget changes a name without following a final link (lsetstat):
// a size makes no sense there, and Linux cannot change a link's mode.
type linkTarget struct {
	fs   fsys
	name string
}

func (t linkTarget) truncate(int64) error {
	return &os.PathError{Op: "lsetstat", Path: t.name, Err: syscall.EINVAL}
}

func (t linkTarget) chmod(mode fs.FileMode) error {
	fi, err := t.fs.lstat(t.name)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &os.PathError{Op: "lchmod", Path: t.name, Err: syscall.EOPNOTSUPP}
	}
	return t.fs.chmod(t.name, mode)
}

func (t linkTarget) chtimes(at, mt time.Time) error { return t.fs.lchtimes(t.name, at, mt) }
func (t linkTarget) chown(uid, gid int) error       { return t.fs.lchown(t.name, uid, gid) }

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

// fileMode converts st_mode permission bits (with setuid, setgid and
// sticky) to a FileMode.
func fileMode(perm uint32) fs.FileMode {
	m := fs.FileMode(perm & 0o777)
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

// unixPerm is fileMode's inverse for logs.
func unixPerm(m fs.FileMode) uint32 { return unixMode(m) & 0o7777 }

func (s *Server) remove(id uint32, in *reader) error {
	p := in.str()
	return s.badOr(id, in, func() error {
		s.log.logf(levelInfo, "remove name \"%s\"", p)
		return s.statusErr(id, s.fs.remove(s.abs(p)))
	})
}

func (s *Server) rmdir(id uint32, in *reader) error {
	p := in.str()
	return s.badOr(id, in, func() error {
		s.log.logf(levelInfo, "rmdir name \"%s\"", p)
		return s.statusErr(id, s.fs.rmdir(s.abs(p)))
	})
}

func (s *Server) mkdir(id uint32, in *reader) error {
	p, a := in.str(), in.attrs()
	return s.badOr(id, in, func() error {
		mode := fs.FileMode(0o777)
		if a.flags&attrPermissions != 0 {
			mode = fileMode(a.perm) & (fs.ModePerm | fs.ModeSticky)
		}
		s.log.logf(levelInfo, "mkdir name \"%s\" mode 0%o", p, unixPerm(mode))
		return s.statusErr(id, s.makeDir(s.abs(p), mode))
	})
}

// makeDir creates a directory with mode masked by the session umask.
func (s *Server) makeDir(name string, mode fs.FileMode) error {
	if s.umask == nil {
		return s.fs.mkdir(name, mode)
	}
	want := mode &^ *s.umask
	if err := s.fs.mkdir(name, want); err != nil {
		return err
	}
	return s.fs.chmod(name, want) // undo a stricter process umask
}

// rename is version 3's RENAME, which must not replace an existing name:
// for regular files a link and an unlink, as OpenSSH (atomic), else a
// check and a rename.
func (s *Server) rename(id uint32, in *reader) error {
	from, to := in.str(), in.str()
	return s.badOr(id, in, func() error {
		s.log.logf(levelInfo, "rename old \"%s\" new \"%s\"", from, to)
		return s.statusErr(id, s.renameNoReplace(s.abs(from), s.abs(to)))
	})
}

func (s *Server) renameNoReplace(from, to string) error {
	fi, err := s.fs.lstat(from)
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		err := s.fs.link(from, to)
		if err == nil {
			if err := s.fs.remove(from); err != nil {
				s.fs.remove(to)
				return err
			}
			return nil
		}
		if !errors.Is(err, syscall.EXDEV) && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EOPNOTSUPP) {
			return err
		}
	}
	if _, err := s.fs.lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EEXIST}
	}
	return s.fs.rename(from, to)
}

func (s *Server) readlink(id uint32, in *reader) error {
	p := in.str()
	return s.badOr(id, in, func() error {
		s.log.logf(levelVerbose, "readlink \"%s\"", p)
		target, err := s.fs.readlink(s.abs(p))
		if err != nil {
			return s.statusErr(id, err)
		}
		return s.name(id, target)
	})
}

// symlink takes OpenSSH's order, which the draft reverses: target, then
// link.
func (s *Server) symlink(id uint32, in *reader) error {
	target, link := in.str(), in.str()
	return s.badOr(id, in, func() error {
		s.log.logf(levelInfo, "symlink old \"%s\" new \"%s\"", target, link)
		return s.statusErr(id, s.fs.symlink(target, s.abs(link)))
	})
}

func (s *Server) realpathReq(id uint32, in *reader) error {
	p := in.str()
	return s.badOr(id, in, func() error {
		if p == "" {
			p = "."
		}
		s.log.logf(levelVerbose, "realpath \"%s\"", p)
		rp, err := realpath(s.walker(), s.unclean(p))
		if err != nil {
			return s.statusErr(id, err)
		}
		return s.name(id, rp)
	})
}

// walker is the file system as realpath reads it.
func (s *Server) walker() linkWalker { return s.fs.(linkWalker) }

// name answers NAME with one entry and empty attributes.
func (s *Server) name(id uint32, p string) error {
	b := s.start(fxpName, id)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = appendString(b, p)
	b = appendString(b, p)
	b = binary.BigEndian.AppendUint32(b, 0)
	return s.finish(b)
}
