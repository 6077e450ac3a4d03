package sftp

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// Bounds on users-groups-by-id: ids per request (the request itself is
// bounded by maxPacket; this keeps the reply within it too).
const maxIDs = 4096

func (s *Server) posixRename(id uint32, in *reader) error {
	from, to := in.str(), in.str()
	return s.badOr(id, in, func() error {
		s.log.logf(levelInfo, "posix-rename old \"%s\" new \"%s\"", from, to)
		return s.statusErr(id, s.fs.rename(s.abs(from), s.abs(to)))
	})
}

func (s *Server) hardlink(id uint32, in *reader) error {
	from, to := in.str(), in.str()
	return s.badOr(id, in, func() error {
		s.log.logf(levelInfo, "hardlink old \"%s\" new \"%s\"", from, to)
		return s.statusErr(id, s.fs.link(s.abs(from), s.abs(to)))
	})
}

func (s *Server) fsync(id uint32, in *reader) error {
	hb := in.bytes()
	return s.badOr(id, in, func() error {
		h := s.handles[string(hb)]
		if h == nil || h.dir {
			return s.status(id, fxFailure, errBadHandle.Error())
		}
		s.log.logf(levelVerbose, "fsync \"%s\"", h.name)
		return s.statusErr(id, h.f.Sync())
	})
}

// lsetstat is SETSTAT on a link itself.
func (s *Server) lsetstat(id uint32, in *reader) error {
	p, a := in.str(), in.attrs()
	return s.badOr(id, in, func() error {
		if a.flags&attrSize != 0 {
			return s.status(id, fxBadMessage, "") // nonsensical for links
		}
		return s.statusErr(id, s.applyAttrs(p, linkTarget{s.fs, s.abs(p)}, a))
	})
}

// limits answers limits@openssh.com: packet, read and write sizes and
// how many more handles may be opened.
func (s *Server) limits(id uint32, _ *reader) error {
	b := s.start(fxpExtendedReply, id)
	b = binary.BigEndian.AppendUint64(b, maxPacket)
	b = binary.BigEndian.AppendUint64(b, maxRead)
	b = binary.BigEndian.AppendUint64(b, maxRead)
	b = binary.BigEndian.AppendUint64(b, uint64(maxHandles-len(s.handles)))
	return s.finish(b)
}

// expandPath answers expand-path@openssh.com: "~" and "~/" are the start
// directory (as OpenSSH, which takes its working directory), "~user" that
// user's home, relative paths start in the start directory; the result is
// resolved as realpath does.
func (s *Server) expandPath(id uint32, in *reader) error {
	p := in.str()
	return s.badOr(id, in, func() error {
		e, err := s.expand(p)
		if err != nil {
			return s.status(id, fxNoSuchFile, "no such user")
		}
		s.log.logf(levelVerbose, "expand \"%s\"", e)
		rp, err := realpath(s.walker(), s.unclean(e))
		if err != nil {
			return s.statusErr(id, err)
		}
		return s.name(id, rp)
	})
}

func (s *Server) expand(p string) (string, error) {
	switch {
	case p == "" || p == "~":
		return s.cwd, nil
	case strings.HasPrefix(p, "~/"):
		return s.cwd + "/" + p[2:], nil
	case !strings.HasPrefix(p, "~"):
		return p, nil
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	u, err := user.Lookup(name)
	if err != nil || u.HomeDir == "" {
		return "", errors.New("no such user")
	}
	return u.HomeDir + "/" + rest, nil
}

// homeDirectory answers home-directory: the session user's home for an
// empty name, else the named user's.
func (s *Server) homeDirectory(id uint32, in *reader) error {
	name := in.str()
	return s.badOr(id, in, func() error {
		home := s.cfg.Home
		if name != "" {
			u, err := user.Lookup(name)
			if err != nil {
				return s.status(id, fxFailure, "")
			}
			home = u.HomeDir
		}
		if home == "" {
			return s.status(id, fxFailure, "")
		}
		s.log.logf(levelVerbose, "home-directory \"%s\"", home)
		return s.name(id, home)
	})
}

// usersGroupsByID answers users-groups-by-id@openssh.com: two strings of
// uint32 ids in, two strings of names out ("" for an unknown id).
func (s *Server) usersGroupsByID(id uint32, in *reader) error {
	uids, gids := in.bytes(), in.bytes()
	if in.bad || len(uids)%4 != 0 || len(gids)%4 != 0 || (len(uids)+len(gids))/4 > maxIDs {
		return s.status(id, fxBadMessage, "")
	}
	b := s.start(fxpExtendedReply, id)
	b = s.appendNames(b, uids, 0)
	b = s.appendNames(b, gids, 1<<32)
	s.log.logf(levelVerbose, "users-groups-by-id: %d users, %d groups", len(uids)/4, len(gids)/4)
	return s.finish(b)
}

// appendNames appends a string holding one name string per id in ids
// (group ids when kind is 1<<32).
func (s *Server) appendNames(b, ids []byte, kind uint64) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	for i := 0; i+4 <= len(ids); i += 4 {
		n := uint64(binary.BigEndian.Uint32(ids[i:]))
		b = appendString(b, s.knownName(n|kind))
	}
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// knownName names a uid (or a gid, marked by bit 32), "" when unknown.
func (s *Server) knownName(key uint64) string {
	lookup := user.LookupId
	if key>>32 != 0 {
		lookup = lookupGroup
	}
	n := s.idName(key, lookup)
	if n == strconv.FormatUint(key&(1<<32-1), 10) {
		return "" // idName falls back to the number
	}
	return n
}

// copyData answers copy-data: copy length bytes (0: to the end) from one
// open handle at an offset to another at an offset, on the server, as
// OpenSSH (which refuses the same file on both sides).
func (s *Server) copyData(id uint32, in *reader) error {
	rh, roff, rlen, wh, woff := in.bytes(), in.u64(), in.u64(), in.bytes(), in.u64()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	src, dst := s.handles[string(rh)], s.handles[string(wh)]
	if src == nil || dst == nil || src.dir || dst.dir {
		return s.status(id, fxFailure, errBadHandle.Error())
	}
	if src == dst || sameFile(src.f, dst.f) {
		s.log.logf(levelError, "refusing to read/write same file: \"%s\", \"%s\"", src.name, dst.name)
		return s.status(id, fxFailure, "")
	}
	if roff > 1<<63-1 || woff > 1<<63-1 {
		return s.status(id, fxFailure, "")
	}
	s.log.logf(levelVerbose, "copy-data from \"%s\" off %d len %d to \"%s\" off %d", src.name, roff, rlen, dst.name, woff)
	n, err := copyRange(src.f, int64(roff), rlen, dst.f, int64(woff), dst.append)
	src.read += uint64(n)
	dst.wrote += uint64(n)
	if err == nil && rlen != 0 && uint64(n) < rlen {
		return s.status(id, fxEOF, "") // the source ended first
	}
	return s.statusErr(id, err)
}

func sameFile(a, b *os.File) bool {
	fa, err1 := a.Stat()
	fb, err2 := b.Stat()
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// copyRange copies n bytes (0: to the end) from src at roff to dst at
// woff (or at its end when appending) and returns how many it copied.
func copyRange(src *os.File, roff int64, n uint64, dst *os.File, woff int64, appending bool) (int64, error) {
	var r io.Reader = io.NewSectionReader(src, roff, 1<<63-1-roff)
	if n != 0 {
		r = io.LimitReader(r, int64(min(n, 1<<63-1)))
	}
	var w io.Writer = dst
	if !appending {
		w = io.NewOffsetWriter(dst, woff)
	}
	buf := make([]byte, 64<<10)
	k, err := io.CopyBuffer(w, r, buf)
	if errors.Is(err, syscall.EINTR) {
		err = nil
	}
	return k, err
}

// statvfs answers statvfs@openssh.com for a path.
func (s *Server) statvfs(id uint32, in *reader) error {
	p := in.str()
	return s.badOr(id, in, func() error {
		s.log.logf(levelInfo, "statvfs \"%s\"", p)
		v, err := s.fs.statfs(s.abs(p))
		return s.statvfsReply(id, v, err)
	})
}

// fstatvfs answers fstatvfs@openssh.com for a handle.
func (s *Server) fstatvfs(id uint32, in *reader) error {
	hb := in.bytes()
	return s.badOr(id, in, func() error {
		h := s.handles[string(hb)]
		if h == nil {
			return s.status(id, fxFailure, errBadHandle.Error())
		}
		v, err := fstatvfs(h.f)
		return s.statvfsReply(id, v, err)
	})
}

func (s *Server) statvfsReply(id uint32, v fsStats, err error) error {
	if err != nil {
		return s.statusErr(id, err)
	}
	b := s.start(fxpExtendedReply, id)
	for _, x := range v {
		b = binary.BigEndian.AppendUint64(b, x)
	}
	return s.finish(b)
}

// fsStats are statvfs's fields in the order of the reply: bsize, frsize,
// blocks, bfree, bavail, files, ffree, favail, fsid, flag, namemax.
type fsStats [11]uint64

// statvfs flags in the reply.
const (
	stRdonly = 1
	stNosuid = 2
)
