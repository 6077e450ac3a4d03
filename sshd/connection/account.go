package connection

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// account is what a session needs to know about the user it runs as.
type account struct {
	name     string
	uid, gid uint32
	groups   []uint32
	home     string
	shell    string
	// cred is set when the server must switch to the user (it runs as
	// root); nil means run as the server's own identity.
	cred *syscall.Credential
}

// AccountError reports why a session cannot run as the user.
type AccountError struct {
	User string
	Err  error
}

func (e *AccountError) Error() string {
	return fmt.Sprintf("connection: account %q: %v", e.User, e.Err)
}

func (e *AccountError) Unwrap() error { return e.Err }

type accountOnce struct {
	once sync.Once
	a    *account
	err  error
}

// Account is the logged-in user's account as sessions need it. A process
// that cannot look users up once it runs (a post-auth process confined
// to a ChrootDirectory, whose user database is not the host's) resolves
// it beforehand and passes it in Config.Account.
type Account struct {
	Name     string
	UID, GID uint32
	Groups   []uint32
	Home     string
	Shell    string
}

// ResolveAccount looks name up in the user database (and its login
// shell) as sessions will see it.
func ResolveAccount(name string) (*Account, error) {
	a, err := lookupAccount(name, -1)
	if err != nil {
		return nil, err
	}
	return &Account{Name: a.name, UID: a.uid, GID: a.gid, Groups: a.groups, Home: a.home, Shell: a.shell}, nil
}

// account resolves the logged-in user once per connection.
func (m *mux) account() (*account, error) {
	m.acct.once.Do(func() {
		if pre := m.cfg.Account; pre != nil && pre.Name == m.perm.User {
			m.acct.a, m.acct.err = fromAccount(pre, os.Geteuid())
			return
		}
		m.acct.a, m.acct.err = lookupAccount(m.perm.User, os.Geteuid())
	})
	return m.acct.a, m.acct.err
}

// fromAccount is a resolved account made ready to run sessions.
func fromAccount(pre *Account, euid int) (*account, error) {
	a := &account{name: pre.Name, uid: pre.UID, gid: pre.GID, groups: pre.Groups, home: pre.Home, shell: pre.Shell}
	if err := a.setCredential(euid); err != nil {
		return nil, &AccountError{User: pre.Name, Err: err}
	}
	return a, nil
}

// lookupAccount finds name in the user database and decides whether the
// server, running with euid, can run sessions for it.
func lookupAccount(name string, euid int) (*account, error) {
	if name == "" {
		return nil, &AccountError{User: name, Err: errors.New("no user name")}
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, &AccountError{User: name, Err: err}
	}
	a, err := accountFromUser(u)
	if err != nil {
		return nil, &AccountError{User: name, Err: err}
	}
	a.shell = loginShell(name)
	if shellOverride != "" {
		a.shell = shellOverride
	}
	if h, ok := homeOverride.Load(name); ok {
		a.home = h.(string)
	}
	if euid < 0 {
		return a, nil // resolved for later (ResolveAccount)
	}
	if err := a.setCredential(euid); err != nil {
		return nil, &AccountError{User: name, Err: err}
	}
	return a, nil
}

func accountFromUser(u *user.User) (*account, error) {
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("bad uid/gid: %w", err)
	}
	a := &account{name: u.Username, uid: uint32(uid), gid: uint32(gid), home: u.HomeDir}
	ids, err := u.GroupIds()
	if err != nil {
		ids = nil // no group database entry: primary group only
	}
	for _, s := range ids {
		if g, err := strconv.ParseUint(s, 10, 32); err == nil {
			a.groups = append(a.groups, uint32(g))
		}
	}
	return a, nil
}

// setCredential decides how to become the user: as root, switch; as
// anyone else, only the server's own account can be served.
func (a *account) setCredential(euid int) error {
	if euid == 0 {
		a.cred = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: a.groups}
		return nil
	}
	if uint32(euid) != a.uid {
		return fmt.Errorf("server runs as uid %d and cannot switch to uid %d", euid, a.uid)
	}
	return nil
}

// needsSwitch reports whether children change identity.
func (a *account) needsSwitch() bool {
	return a.cred != nil && uint32(os.Geteuid()) != a.uid
}

// shellOverride replaces login shells in tests, so that a developer's
// slow ~/.bashrc (bash sources it when SSH_CLIENT is set) does not slow
// every test down.
var shellOverride string

// homeOverride replaces home directories in tests (user name to home),
// so that tests of ~/.ssh files never touch a real home.
var homeOverride sync.Map

// Bounds on the passwd parser.
const (
	maxPasswdLine  = 4096
	maxPasswdBytes = 16 << 20
	defaultShell   = "/bin/sh"
)

// loginShell finds the user's shell in /etc/passwd, then through getent
// (NSS users), falling back to /bin/sh.
func loginShell(name string) string {
	if f, err := os.Open("/etc/passwd"); err == nil {
		defer f.Close()
		if sh, ok := shellFromPasswd(io.LimitReader(f, maxPasswdBytes), name); ok {
			return sh
		}
	}
	if sh, ok := shellFromGetent(name); ok {
		return sh
	}
	return defaultShell
}

// shellFromPasswd parses passwd(5) lines, skipping overlong ones.
func shellFromPasswd(r io.Reader, name string) (string, bool) {
	br := bufio.NewReaderSize(r, maxPasswdLine)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			skipLine(br)
			continue
		}
		if sh, ok := passwdShell(bytes.TrimRight(line, "\n"), name); ok {
			return sh, true
		}
		if err != nil {
			return "", false
		}
	}
}

// skipLine discards the rest of an overlong line.
func skipLine(br *bufio.Reader) {
	for {
		_, err := br.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return
		}
	}
}

// passwdShell returns the shell field of line when it is name's entry.
func passwdShell(line []byte, name string) (string, bool) {
	f := bytes.Split(line, []byte(":"))
	if len(f) != 7 || string(f[0]) != name {
		return "", false
	}
	sh := strings.TrimSpace(string(f[6]))
	if sh == "" {
		sh = defaultShell
	}
	return sh, true
}

func shellFromGetent(name string) (string, bool) {
	if strings.ContainsAny(name, ":\n\x00") || strings.HasPrefix(name, "-") {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "getent", "passwd", name).Output()
	if err != nil || len(out) > maxPasswdLine {
		return "", false
	}
	return passwdShell(bytes.TrimRight(out, "\n"), name)
}
