package connection

import (
	"os"
	"strings"
	"sync"
)

// authInfoFile is a connection's SSH_USER_AUTH (ExposeAuthInfo): a file
// of the user's, mode 0600, with the authentication methods that
// succeeded, one a line. As OpenSSH, one per connection, made for the
// first session and removed when the connection ends.
type authInfoFile struct {
	mu     sync.Mutex
	made   bool // tried: a failure is logged once and not retried
	path   string
	closed bool
}

// authInfoPath is SSH_USER_AUTH for a session of the account a, "" when
// ExposeAuthInfo is off or the file could not be written (logged; the
// session goes on without it, as in OpenSSH).
func (m *mux) authInfoPath(a *account) string {
	if !m.cfg.ExposeAuthInfo || m.perm == nil || len(m.perm.AuthInfo) == 0 {
		return ""
	}
	f := &m.authInfo
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.made {
		return f.path
	}
	f.made = true
	path, err := writeAuthInfo(a, m.perm.AuthInfo)
	if err != nil {
		m.log.Error("connection: SSH_USER_AUTH not written", "err", err)
		return ""
	}
	f.path = path
	return path
}

// writeAuthInfo writes the lines to a new file in the temporary
// directory (created exclusively, mode 0600) and gives it to the user
// when this process is not already running as the user.
func writeAuthInfo(a *account, lines []string) (string, error) {
	f, err := os.CreateTemp("", "sshauth.*")
	if err != nil {
		return "", err
	}
	path := f.Name()
	if a.needsSwitch() {
		err = f.Chown(int(a.uid), int(a.gid))
	}
	if err == nil {
		_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// close removes the file; no session made later gets one.
func (f *authInfoFile) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.path != "" {
		os.Remove(f.path)
		f.path = ""
	}
}
