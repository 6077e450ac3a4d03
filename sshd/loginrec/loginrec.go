// Package loginrec records logins as OpenSSH's sshd does for pty
// sessions: a USER_PROCESS entry in utmp (who, w), the same appended to
// wtmp (last), the time, line and host in lastlog (lastlog, and the
// "Last login:" line), and a DEAD_PROCESS entry in both at logout.
//
// # Files
//
// Linux's formats on this architecture: utmp and wtmp are arrays of
// glibc's 384-byte struct utmp, lastlog is indexed by uid with 292-byte
// entries (Debian 12: /run/utmp, /var/log/wtmp, /var/log/lastlog).
// Entries are written as OpenSSH's loginrec.c fills them and Debian's
// build writes them (through glibc's login, logout and logwtmp): ut_line
// is the tty without "/dev/", ut_id its last four characters, ut_user the
// user, ut_host the client's name (its address with UseDNS no),
// ut_addr_v6 its address, ut_tv the time and ut_pid the session's
// process. The utmp entry with the same ut_id is replaced, as pututline
// does. At logout the utmp entry of the line becomes DEAD_PROCESS with
// user and host cleared, and wtmp gets a DEAD_PROCESS entry with only the
// line and time. Access is serialised with fcntl locks, as glibc does. A missing utmp file is created (root:utmp 0664, as
// systemd-tmpfiles makes it at boot); wtmp and lastlog are written only
// where they exist, as OpenSSH does.
//
// # Not handled
//
// lastlog2 and wtmpdb (SQLite databases newer distributions use) are not
// written; Login reports ErrDatabases when their files exist so that the
// caller can say so.
package loginrec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Default paths.
const (
	UtmpFile    = "/run/utmp"
	WtmpFile    = "/var/log/wtmp"
	LastlogFile = "/var/log/lastlog"
)

// Newer databases this package does not write.
var databases = []string{"/var/lib/wtmpdb/wtmp.db", "/var/lib/lastlog/lastlog2.db"}

// ErrDatabases: the system also keeps wtmpdb or lastlog2, which are not
// written.
var ErrDatabases = errors.New("loginrec: wtmpdb/lastlog2 databases exist and are not written")

// Record is one login of a pty session.
type Record struct {
	User string
	UID  uint32
	PID  int    // the session's process
	TTY  string // "/dev/pts/3"
	Host string // the client's name, or its address
	Addr netip.Addr
	Time time.Time // zero means now
}

// Files names the files to write; the zero value writes the system's.
type Files struct {
	Utmp, Wtmp, Lastlog string
}

func (f Files) paths() (utmp, wtmp, lastlog string) {
	utmp, wtmp, lastlog = f.Utmp, f.Wtmp, f.Lastlog
	if utmp == "" {
		utmp = UtmpFile
	}
	if wtmp == "" {
		wtmp = WtmpFile
	}
	if lastlog == "" {
		lastlog = LastlogFile
	}
	return
}

// Last is a user's previous login from lastlog.
type Last struct {
	Time time.Time // zero when the user never logged in
	Line string
	Host string
}

// Message is OpenSSH's PrintLastLog line ("Last login: Thu Dec  3
// 12:41:33 2026 from 192.0.2.1"), or "" when there was no login.
func (l Last) Message() string {
	if l.Time.IsZero() {
		return ""
	}
	t := l.Time.Local().Format("Mon Jan _2 15:04:05 2006")
	if l.Host == "" {
		return "Last login: " + t
	}
	return "Last login: " + t + " from " + l.Host
}

// Login records r's login and returns the user's previous login (for
// PrintLastLog), read from lastlog before it is overwritten. Every file
// is tried; the error joins what failed.
func (f Files) Login(r Record) (Last, error) {
	utmp, wtmp, lastlog := f.paths()
	u := newEntry(r, userProcess)
	prev, lerr := readLastlog(lastlog, r.UID)
	err := errors.Join(putUtmp(utmp, u), appendWtmp(wtmp, u), writeLastlog(lastlog, r))
	if lerr != nil && !errors.Is(lerr, os.ErrNotExist) {
		err = errors.Join(err, lerr)
	}
	if f == (Files{}) {
		for _, db := range databases {
			if _, serr := os.Stat(db); serr == nil {
				err = errors.Join(err, ErrDatabases)
				break
			}
		}
	}
	return prev, err
}

// Logout records the end of r's session as OpenSSH on Debian does
// (glibc's logout and logwtmp): the utmp entry of the line becomes a
// DEAD_PROCESS with user and host cleared, and wtmp gets a DEAD_PROCESS
// entry naming only the line.
func (f Files) Logout(r Record) error {
	utmp, wtmp, _ := f.paths()
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	line := strings.TrimPrefix(r.TTY, "/dev/")
	w := &Entry{Type: deadProcess, PID: int32(r.PID), Line: line, Time: t}
	return errors.Join(endUtmp(utmp, line, t), appendWtmp(wtmp, w))
}

// endUtmp marks the user entry of line dead, as glibc's logout.
func endUtmp(path, line string, t time.Time) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("loginrec: utmp: %w", err)
	}
	defer f.Close()
	if err := lock(f, unix.F_WRLCK); err != nil {
		return fmt.Errorf("loginrec: utmp lock: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("loginrec: utmp: %w", err)
	}
	buf := make([]byte, utmpSize)
	for off := int64(0); off+utmpSize <= fi.Size(); off += utmpSize {
		if _, err := f.ReadAt(buf, off); err != nil {
			return fmt.Errorf("loginrec: utmp: %w", err)
		}
		e, _ := Unmarshal(buf)
		if e.Line != line || (e.Type != userProcess && e.Type != 6) {
			continue
		}
		e.Type, e.User, e.Host, e.Time = deadProcess, "", "", t
		_, err := f.WriteAt(e.Marshal(), off)
		return wrapErr("utmp", err)
	}
	return nil
}

func wrapErr(what string, err error) error {
	if err != nil {
		return fmt.Errorf("loginrec: %s: %w", what, err)
	}
	return nil
}

// LastLogin reads uid's entry from lastlog.
func (f Files) LastLogin(uid uint32) (Last, error) {
	_, _, lastlog := f.paths()
	return readLastlog(lastlog, uid)
}

// glibc's struct utmp on Linux (all architectures with a 64-bit time_t
// compat layout keep ut_tv as two int32).
const (
	utmpSize    = 384
	lineSize    = 32
	idSize      = 4
	nameSize    = 32
	hostSize    = 256
	userProcess = 7
	deadProcess = 8

	offType = 0
	offPID  = 4
	offLine = 8
	offID   = 40
	offUser = 44
	offHost = 76
	offSess = 336
	offTv   = 340
	offAddr = 348

	lastlogSize = 4 + lineSize + hostSize // 292
)

// Entry is a decoded utmp/wtmp record.
type Entry struct {
	Type int16
	PID  int32
	Line string
	ID   string
	User string
	Host string
	Time time.Time
	Addr netip.Addr
}

func newEntry(r Record, typ int16) *Entry {
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	line := strings.TrimPrefix(r.TTY, "/dev/")
	e := &Entry{Type: typ, PID: int32(r.PID), Line: line, ID: abbrev(line), User: r.User, Time: t}
	if typ == userProcess {
		e.Host, e.Addr = r.Host, r.Addr.Unmap()
	}
	return e
}

// abbrev is OpenSSH's line_abbrevname on Linux: the last four bytes.
func abbrev(line string) string {
	if len(line) > idSize {
		return line[len(line)-idSize:]
	}
	return line
}

// Marshal encodes e as a struct utmp.
func (e *Entry) Marshal() []byte {
	b := make([]byte, utmpSize)
	le := binary.NativeEndian
	le.PutUint16(b[offType:], uint16(e.Type))
	le.PutUint32(b[offPID:], uint32(e.PID))
	copy(b[offLine:offLine+lineSize], e.Line)
	copy(b[offID:offID+idSize], e.ID)
	copy(b[offUser:offUser+nameSize], e.User)
	copy(b[offHost:offHost+hostSize], e.Host)
	le.PutUint32(b[offTv:], uint32(e.Time.Unix()))
	le.PutUint32(b[offTv+4:], uint32(e.Time.Nanosecond()/1000))
	if e.Addr.Is4() {
		a := e.Addr.As4()
		copy(b[offAddr:], a[:])
	} else if e.Addr.Is6() {
		a := e.Addr.As16()
		copy(b[offAddr:], a[:])
	}
	return b
}

// Unmarshal decodes a struct utmp.
func Unmarshal(b []byte) (*Entry, error) {
	if len(b) != utmpSize {
		return nil, fmt.Errorf("loginrec: utmp entry of %d bytes, want %d", len(b), utmpSize)
	}
	le := binary.NativeEndian
	e := &Entry{Type: int16(le.Uint16(b[offType:])), PID: int32(le.Uint32(b[offPID:])),
		Line: cstr(b[offLine : offLine+lineSize]), ID: cstr(b[offID : offID+idSize]),
		User: cstr(b[offUser : offUser+nameSize]), Host: cstr(b[offHost : offHost+hostSize]),
		Time: time.Unix(int64(int32(le.Uint32(b[offTv:]))), int64(int32(le.Uint32(b[offTv+4:])))*1000)}
	addr := b[offAddr : offAddr+16]
	if allZero(addr[4:]) {
		e.Addr = netip.AddrFrom4([4]byte(addr[:4]))
		if allZero(addr[:4]) {
			e.Addr = netip.Addr{}
		}
	} else {
		e.Addr = netip.AddrFrom16([16]byte(addr))
	}
	return e, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func cstr(b []byte) string {
	if i := indexZero(b); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// lock takes an fcntl lock on the whole file, as glibc's utmp code does.
func lock(f *os.File, typ int16) error {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart}
	return unix.FcntlFlock(f.Fd(), unix.F_SETLKW, &lk)
}

// putUtmp replaces the entry with e's ut_id (or a free DEAD entry with
// the same line), else appends, as pututxline.
func putUtmp(path string, e *Entry) error {
	f, err := openUtmp(path)
	if err != nil {
		return fmt.Errorf("loginrec: utmp: %w", err)
	}
	defer f.Close()
	if err := lock(f, unix.F_WRLCK); err != nil {
		return fmt.Errorf("loginrec: utmp lock: %w", err)
	}
	off, err := findSlot(f, e)
	if err != nil {
		return fmt.Errorf("loginrec: utmp: %w", err)
	}
	if _, err := f.WriteAt(e.Marshal(), off); err != nil {
		return fmt.Errorf("loginrec: utmp: %w", err)
	}
	return nil
}

// openUtmp opens utmp, creating it root:utmp 0664 when missing.
func openUtmp(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if !errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o664)
	if err == nil {
		if g, gerr := user.LookupGroup("utmp"); gerr == nil {
			gid, _ := strconv.Atoi(g.Gid)
			f.Chown(0, gid)
		}
	}
	return f, err
}

// findSlot returns the offset to write e at.
func findSlot(f *os.File, e *Entry) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	n := fi.Size() / utmpSize
	buf := make([]byte, utmpSize)
	for i := int64(0); i < n; i++ {
		if _, err := f.ReadAt(buf, i*utmpSize); err != nil {
			return 0, err
		}
		old, _ := Unmarshal(buf)
		if sameSlot(old, e) {
			return i * utmpSize, nil
		}
	}
	return n * utmpSize, nil
}

// sameSlot is glibc's match for process entries: the same ut_id.
func sameSlot(old, e *Entry) bool {
	switch old.Type {
	case userProcess, deadProcess, 5 /* INIT_PROCESS */, 6 /* LOGIN_PROCESS */ :
		return old.ID == e.ID
	}
	return false
}

// appendWtmp appends e to wtmp when the file exists.
func appendWtmp(path string, e *Entry) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("loginrec: wtmp: %w", err)
	}
	defer f.Close()
	if err := lock(f, unix.F_WRLCK); err != nil {
		return fmt.Errorf("loginrec: wtmp lock: %w", err)
	}
	if _, err := f.Write(e.Marshal()); err != nil {
		return fmt.Errorf("loginrec: wtmp: %w", err)
	}
	return nil
}

// writeLastlog writes r at uid's offset when the file exists.
func writeLastlog(path string, r Record) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("loginrec: lastlog: %w", err)
	}
	defer f.Close()
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	b := make([]byte, lastlogSize)
	binary.NativeEndian.PutUint32(b, uint32(t.Unix()))
	copy(b[4:4+lineSize], strings.TrimPrefix(r.TTY, "/dev/"))
	copy(b[4+lineSize:], r.Host)
	if _, err := f.WriteAt(b, int64(r.UID)*lastlogSize); err != nil {
		return fmt.Errorf("loginrec: lastlog: %w", err)
	}
	return nil
}

func readLastlog(path string, uid uint32) (Last, error) {
	f, err := os.Open(path)
	if err != nil {
		return Last{}, fmt.Errorf("loginrec: lastlog: %w", err)
	}
	defer f.Close()
	b := make([]byte, lastlogSize)
	n, err := f.ReadAt(b, int64(uid)*lastlogSize)
	if n < lastlogSize {
		if err == io.EOF {
			return Last{}, nil // never logged in: the file is sparse there
		}
		return Last{}, fmt.Errorf("loginrec: lastlog: %w", err)
	}
	return parseLastlog(b), nil
}

func parseLastlog(b []byte) Last {
	sec := int32(binary.NativeEndian.Uint32(b))
	if sec == 0 {
		return Last{}
	}
	return Last{Time: time.Unix(int64(sec), 0), Line: cstr(b[4 : 4+lineSize]), Host: cstr(b[4+lineSize : lastlogSize])}
}
