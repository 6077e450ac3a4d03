package connection

import (
	"encoding/binary"
	"os"
	"strings"
)

// sftpExtensions are announced in VERSION, as OpenSSH's sftp-server
// names them.
var sftpExtensions = [...][2]string{
	{"posix-rename@openssh.com", "1"},
	{"statvfs@openssh.com", "2"},
	{"fstatvfs@openssh.com", "2"},
	{"hardlink@openssh.com", "1"},
	{"fsync@openssh.com", "1"},
	{"limits@openssh.com", "1"},
	{"expand-path@openssh.com", "1"},
}

// extended answers EXTENDED requests.
func (s *sftpServer) extended(id uint32, in *sftpIn) error {
	name := in.bytes()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	switch string(name) {
	case "limits@openssh.com":
		return s.limits(id)
	case "posix-rename@openssh.com":
		from, to := in.str(), in.str()
		return s.extStatus(id, in, func() error { return os.Rename(s.local(from), s.local(to)) })
	case "hardlink@openssh.com":
		from, to := in.str(), in.str()
		return s.extStatus(id, in, func() error { return os.Link(s.local(from), s.local(to)) })
	case "fsync@openssh.com":
		hb := in.bytes()
		return s.extStatus(id, in, func() error {
			h := s.handles[string(hb)]
			if h == nil {
				return errBadHandle
			}
			return h.f.Sync()
		})
	case "statvfs@openssh.com", "fstatvfs@openssh.com":
		return s.statvfs(id, string(name), in)
	case "expand-path@openssh.com":
		p := in.str()
		return s.checked(id, in, func() error { return s.name(id, s.realpath(s.expandHome(p))) })
	}
	return s.status(id, fxOpUnsupported, "")
}

// extStatus runs f for a well-formed request and answers its status.
func (s *sftpServer) extStatus(id uint32, in *sftpIn, f func() error) error {
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	err := f()
	if err == errBadHandle {
		return s.status(id, fxFailure, err.Error())
	}
	return s.statusErr(id, err)
}

// limits answers limits@openssh.com: packet, read and write sizes and
// how many more handles may be opened.
func (s *sftpServer) limits(id uint32) error {
	b := s.start(fxpExtendedReply, id)
	b = binary.BigEndian.AppendUint64(b, sftpMaxPacket)
	b = binary.BigEndian.AppendUint64(b, sftpMaxRead)
	b = binary.BigEndian.AppendUint64(b, sftpMaxRead)
	b = binary.BigEndian.AppendUint64(b, uint64(sftpMaxHandles-len(s.handles)))
	return s.finish(b)
}

// expandHome replaces a leading "~" or "~/" with the home directory;
// other users' "~name" is left as it is.
func (s *sftpServer) expandHome(p string) string {
	if p == "~" {
		return s.home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return s.home + "/" + rest
	}
	return p
}

// statvfs answers statvfs@openssh.com (a path) and fstatvfs (a handle).
func (s *sftpServer) statvfs(id uint32, ext string, in *sftpIn) error {
	arg := in.bytes()
	if in.bad {
		return s.status(id, fxBadMessage, "")
	}
	var v fsStats
	var err error
	if ext == "fstatvfs@openssh.com" {
		h := s.handles[string(arg)]
		if h == nil {
			return s.status(id, fxFailure, errBadHandle.Error())
		}
		v, err = fstatvfs(h.f)
	} else {
		v, err = statvfs(s.local(string(arg)))
	}
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
