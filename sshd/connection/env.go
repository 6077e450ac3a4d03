package connection

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/offload/offload/sshd/match"
)

// Bounds on the files read for a session's environment and umask.
const (
	maxEnvFileBytes = 256 << 10
	maxEnvFileLines = 1000 // as OpenSSH
	maxDefsBytes    = 1 << 20
	loginDefsPath   = "/etc/login.defs"
	defaultUmask    = 0o022
)

// envList is a child's environment where setting a name replaces an
// earlier value, as OpenSSH's child_set_env.
type envList struct {
	vars []string
	at   map[string]int
}

func (e *envList) set(name, value string) {
	if e.at == nil {
		e.at = map[string]int{}
	}
	kv := name + "=" + value
	if i, ok := e.at[name]; ok {
		e.vars[i] = kv
		return
	}
	e.at[name] = len(e.vars)
	e.vars = append(e.vars, kv)
}

// setPair sets a NAME=value string; malformed ones are skipped.
func (e *envList) setPair(kv string) {
	name, value, ok := strings.Cut(kv, "=")
	if ok && name != "" {
		e.set(name, value)
	}
}

// parseEnvironmentFile reads ~/.ssh/environment as OpenSSH does: lines of
// NAME=value, blank lines and lines starting with '#' skipped (after
// leading blanks), lines without '=' skipped, names filtered by allow.
// More than 1000 lines is an error.
func parseEnvironmentFile(data []byte, allow []string) ([]string, error) {
	var out []string
	lines := 0
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if lines++; lines > maxEnvFileLines {
			return nil, refuse("environment", "more than %d lines in ~/.ssh/environment", maxEnvFileLines)
		}
		line = bytes.TrimRight(bytes.TrimLeft(line, " \t"), "\r")
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		name, value, ok := bytes.Cut(line, []byte("="))
		if !ok || len(name) == 0 || bytes.IndexByte(line, 0) >= 0 || match.Patterns(string(name), allow) != match.Matched {
			continue
		}
		out = append(out, string(name)+"="+string(value))
	}
	return out, nil
}

// keyEnvAllowed reports whether an authorized_keys environment= pair
// (already let through by the auth layer) is set: always, unless
// PermitUserEnvironment's patterns do not match its name.
func (s *settings) keyEnvAllowed(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	return s.PermitUserEnvironment == nil || match.Patterns(name, s.PermitUserEnvironment) == match.Matched
}

// loginDefsUmask returns UMASK from login.defs, 022 when absent or bad.
// The file is parsed again only when it changes (another inode, size or
// modification time), so a connection pays one stat for it.
func loginDefsUmask(path string) fs.FileMode { return loginDefs.umask(path) }

var loginDefs defsCache

// defsCache is the last login.defs parsed and what it said.
type defsCache struct {
	mu    sync.Mutex
	path  string
	stamp defsStamp
	mode  fs.FileMode
}

// defsStamp tells one version of a file from another.
type defsStamp struct {
	dev, ino uint64
	size     int64
	mtime    syscall.Timespec
}

func (c *defsCache) umask(path string) fs.FileMode {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return defaultUmask
	}
	stamp := defsStamp{uint64(st.Dev), st.Ino, st.Size, st.Mtim}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.path != path || c.stamp != stamp {
		c.path, c.stamp, c.mode = path, stamp, readLoginDefsUmask(path)
	}
	return c.mode
}

func readLoginDefsUmask(path string) fs.FileMode {
	f, err := os.Open(path)
	if err != nil {
		return defaultUmask
	}
	defer f.Close()
	m, ok := parseLoginDefsUmask(io.LimitReader(f, maxDefsBytes))
	if !ok {
		return defaultUmask
	}
	return m
}

// parseLoginDefsUmask finds "UMASK value" (octal) in login.defs text,
// skipping overlong lines; the last valid entry wins, as shadow's getdef.
func parseLoginDefsUmask(r io.Reader) (fs.FileMode, bool) {
	br := bufio.NewReaderSize(r, maxPasswdLine)
	var m fs.FileMode
	found := false
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			skipLine(br)
			continue
		}
		if f := bytes.Fields(line); len(f) >= 2 && string(f[0]) == "UMASK" {
			if v, perr := strconv.ParseUint(string(f[1]), 8, 32); perr == nil && v <= 0o777 {
				m, found = fs.FileMode(v), true
			}
		}
		if err != nil {
			return m, found
		}
	}
}

// readUserFile reads a small file in the user's home directory as the
// user may: when the connection layer runs as the user the kernel checks
// it; otherwise (a root server in the in-process mode) the file must be a
// regular file the user owns, reached without a final symbolic link, so
// root cannot be made to read another file for the user.
func readUserFile(a *account, path string, limit int64) ([]byte, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if a.needsSwitch() {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || (a.needsSwitch() && (!ok || st.Uid != a.uid)) {
		return nil, &os.PathError{Op: "read", Path: path, Err: syscall.EPERM}
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// userFileExists reports whether a file in the user's home exists, as
// OpenSSH's stat for ~/.ssh/rc and ~/.hushlogin.
func userFileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
