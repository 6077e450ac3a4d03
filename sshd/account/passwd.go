package account

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Account is a user's passwd entry and, when there is one, shadow entry.
type Account struct {
	Name   string
	Passwd string // the passwd file's password field ("x" when shadowed)
	UID    uint32
	GID    uint32
	Gecos  string
	Home   string
	Shell  string // "" means /bin/sh, as login(1) and OpenSSH take it
	Shadow *Shadow
}

// Shadow is a shadow(5) entry. Day counts are days since 1970-01-01;
// an empty field is -1.
type Shadow struct {
	Name       string
	Hash       string // the encrypted password, or a lock marker
	LastChange int64  // 0 forces a change at next login
	Min, Max   int64  // password age limits in days
	Warn       int64  // days of warning before the password expires
	Inactive   int64  // days after expiry during which a change is allowed
	Expire     int64  // the day the account expires
}

// Default database paths.
const (
	PasswdFile = "/etc/passwd"
	ShadowFile = "/etc/shadow"
)

// maxDBSize bounds /etc/passwd and /etc/shadow; maxDBLine one entry.
const (
	maxDBSize = 64 << 20
	maxDBLine = 64 << 10
)

// ErrNoUser is a name with no passwd entry.
var ErrNoUser = errors.New("account: no such user")

// ParseError is a malformed passwd or shadow entry.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("account: %s line %d: %s", e.File, e.Line, e.Msg)
}

// Files reads accounts from passwd and shadow files. The zero value
// reads /etc/passwd and /etc/shadow. Only the files are read: accounts
// that come from other NSS sources (LDAP, sssd) are not found.
type Files struct {
	Passwd string
	Shadow string
}

// Lookup returns name's account. A missing or unreadable shadow file
// leaves Shadow nil (an unprivileged caller cannot read it).
func (f Files) Lookup(name string) (*Account, error) {
	pf := f.Passwd
	if pf == "" {
		pf = PasswdFile
	}
	fields, err := findEntry(pf, name, 7)
	if err != nil {
		return nil, err
	}
	a, err := passwdFromFields(fields)
	if err != nil {
		return nil, &ParseError{File: pf, Msg: err.Error()}
	}
	a.Shadow, _ = f.LookupShadow(name)
	return a, nil
}

// LookupShadow returns name's shadow entry.
func (f Files) LookupShadow(name string) (*Shadow, error) {
	sf := f.Shadow
	if sf == "" {
		sf = ShadowFile
	}
	fields, err := findEntry(sf, name, 9)
	if err != nil {
		return nil, err
	}
	s, err := shadowFromFields(fields)
	if err != nil {
		return nil, &ParseError{File: sf, Msg: err.Error()}
	}
	return s, nil
}

// findEntry returns the colon-separated fields of name's line in path.
func findEntry(path, name string, n int) ([]string, error) {
	if name == "" || strings.ContainsAny(name, ":\n") {
		return nil, ErrNoUser
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("account: %w", err)
	}
	defer f.Close()
	return scanEntries(io.LimitReader(f, maxDBSize), path, name, n)
}

func scanEntries(r io.Reader, path, name string, n int) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxDBLine)
	prefix := []byte(name + ":")
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if !bytes.HasPrefix(b, prefix) {
			continue
		}
		fields := strings.Split(string(b), ":")
		if len(fields) != n {
			return nil, &ParseError{path, line, fmt.Sprintf("%d fields, want %d", len(fields), n)}
		}
		return fields, nil
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("account: %s: %w", path, err)
	}
	return nil, ErrNoUser
}

// ParsePasswd parses one passwd(5) line.
func ParsePasswd(line string) (*Account, error) {
	fields := strings.Split(strings.TrimSuffix(line, "\n"), ":")
	if len(fields) != 7 {
		return nil, fmt.Errorf("account: passwd entry has %d fields, want 7", len(fields))
	}
	return passwdFromFields(fields)
}

func passwdFromFields(f []string) (*Account, error) {
	uid, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("account: uid %q", f[2])
	}
	gid, err := strconv.ParseUint(f[3], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("account: gid %q", f[3])
	}
	if f[0] == "" {
		return nil, errors.New("account: empty user name")
	}
	return &Account{Name: f[0], Passwd: f[1], UID: uint32(uid), GID: uint32(gid), Gecos: f[4], Home: f[5], Shell: f[6]}, nil
}

// ParseShadow parses one shadow(5) line.
func ParseShadow(line string) (*Shadow, error) {
	fields := strings.Split(strings.TrimSuffix(line, "\n"), ":")
	if len(fields) != 9 {
		return nil, fmt.Errorf("account: shadow entry has %d fields, want 9", len(fields))
	}
	return shadowFromFields(fields)
}

func shadowFromFields(f []string) (*Shadow, error) {
	if f[0] == "" {
		return nil, errors.New("account: empty user name")
	}
	s := &Shadow{Name: f[0], Hash: f[1]}
	for i, p := range []*int64{&s.LastChange, &s.Min, &s.Max, &s.Warn, &s.Inactive, &s.Expire} {
		v, err := days(f[2+i])
		if err != nil {
			return nil, err
		}
		*p = v
	}
	return s, nil
}

// days parses a day count; empty is -1.
func days(s string) (int64, error) {
	if s == "" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < -1 || v > 1<<40 {
		return 0, fmt.Errorf("account: day count %q", s)
	}
	return v, nil
}

// Hash returns the stored password hash: the shadow entry's, or the
// passwd field when there is no shadow entry.
func (a *Account) Hash() string {
	if a.Shadow != nil {
		return a.Shadow.Hash
	}
	return a.Passwd
}

// LoginShell is the shell a login runs: Shell, or /bin/sh when empty.
func (a *Account) LoginShell() string {
	if a.Shell == "" {
		return "/bin/sh"
	}
	return a.Shell
}
