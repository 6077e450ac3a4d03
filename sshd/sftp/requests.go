package sftp

// request describes one request the server answers: its packet type (or
// its extension name), the name -p and -P use, and whether it changes the
// file system (refused by -R).
type request struct {
	name    string // as sftp-server -Q requests prints it
	typ     byte   // packet type; fxpExtended for extensions
	ext     string // extension name, announced in VERSION with version
	version string
	writes  bool
	serve   func(s *Server, id uint32, in *reader) error
}

// requests is the table of requests, in sftp-server -Q requests order;
// VERSION announces the extensions in this order too.
var requests = [...]request{
	{name: "open", typ: fxpOpen, serve: (*Server).open}, // -R is checked per open mode
	{name: "close", typ: fxpClose, serve: (*Server).closeHandle},
	{name: "read", typ: fxpRead, serve: (*Server).read},
	{name: "write", typ: fxpWrite, writes: true, serve: (*Server).write},
	{name: "lstat", typ: fxpLstat, serve: (*Server).lstat},
	{name: "fstat", typ: fxpFstat, serve: (*Server).fstat},
	{name: "setstat", typ: fxpSetstat, writes: true, serve: (*Server).setstat},
	{name: "fsetstat", typ: fxpFsetstat, writes: true, serve: (*Server).fsetstat},
	{name: "opendir", typ: fxpOpendir, serve: (*Server).opendir},
	{name: "readdir", typ: fxpReaddir, serve: (*Server).readdir},
	{name: "remove", typ: fxpRemove, writes: true, serve: (*Server).remove},
	{name: "mkdir", typ: fxpMkdir, writes: true, serve: (*Server).mkdir},
	{name: "rmdir", typ: fxpRmdir, writes: true, serve: (*Server).rmdir},
	{name: "realpath", typ: fxpRealpath, serve: (*Server).realpathReq},
	{name: "stat", typ: fxpStat, serve: (*Server).stat},
	{name: "rename", typ: fxpRename, writes: true, serve: (*Server).rename},
	{name: "readlink", typ: fxpReadlink, serve: (*Server).readlink},
	{name: "symlink", typ: fxpSymlink, writes: true, serve: (*Server).symlink},
	{name: "posix-rename", typ: fxpExtended, ext: "posix-rename@openssh.com", version: "1", writes: true, serve: (*Server).posixRename},
	{name: "statvfs", typ: fxpExtended, ext: "statvfs@openssh.com", version: "2", serve: (*Server).statvfs},
	{name: "fstatvfs", typ: fxpExtended, ext: "fstatvfs@openssh.com", version: "2", serve: (*Server).fstatvfs},
	{name: "hardlink", typ: fxpExtended, ext: "hardlink@openssh.com", version: "1", writes: true, serve: (*Server).hardlink},
	{name: "fsync", typ: fxpExtended, ext: "fsync@openssh.com", version: "1", writes: true, serve: (*Server).fsync},
	{name: "lsetstat", typ: fxpExtended, ext: "lsetstat@openssh.com", version: "1", writes: true, serve: (*Server).lsetstat},
	{name: "limits", typ: fxpExtended, ext: "limits@openssh.com", version: "1", serve: (*Server).limits},
	{name: "expand-path", typ: fxpExtended, ext: "expand-path@openssh.com", version: "1", serve: (*Server).expandPath},
	{name: "copy-data", typ: fxpExtended, ext: "copy-data", version: "1", writes: true, serve: (*Server).copyData},
	{name: "home-directory", typ: fxpExtended, ext: "home-directory", version: "1", serve: (*Server).homeDirectory},
	{name: "users-groups-by-id", typ: fxpExtended, ext: "users-groups-by-id@openssh.com", version: "1", serve: (*Server).usersGroupsByID},
}

// Requests returns the request names -p and -P accept, in the order
// OpenSSH's sftp-server -Q requests lists them.
func Requests() []string {
	names := make([]string, len(requests))
	for i := range requests {
		names[i] = requests[i].name
	}
	return names
}

// byType indexes the non-extended requests by packet type.
var byType = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i, r := range requests {
		if r.typ != fxpExtended {
			t[r.typ] = int8(i)
		}
	}
	return t
}()

// lookupType finds a request by packet type; nil for unknown types.
func lookupType(t byte) (int, *request) {
	i := byType[t]
	if i < 0 {
		return -1, nil
	}
	return int(i), &requests[i]
}

// lookupExt finds an extended request by its extension name.
func lookupExt(name []byte) (int, *request) {
	for i := range requests {
		if r := &requests[i]; r.typ == fxpExtended && r.ext == string(name) {
			return i, r
		}
	}
	return -1, nil
}

// lookupName finds a request by its -p/-P name.
func lookupName(name string) *request {
	for i := range requests {
		if requests[i].name == name {
			return &requests[i]
		}
	}
	return nil
}

// refusal says why the options refuse request r, or "" when they allow it.
func (o *Options) refusal(r *request) string {
	switch {
	case o.ReadOnly && r.writes:
		return "Refusing " + r.name + " request in read-only mode"
	case contains(o.Deny, r.name):
		return "Refusing denylisted " + r.name + " request"
	case o.Allow != nil && !contains(o.Allow, r.name):
		return "Refusing non-allowlisted " + r.name + " request"
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
