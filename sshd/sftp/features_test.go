package sftp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// permDenied reports whether err is SSH_FX_PERMISSION_DENIED, which
// pkg/sftp turns into fs.ErrPermission.
func permDenied(err error) bool { return errors.Is(err, fs.ErrPermission) }

// TestReadOnly: -R refuses every change with PERMISSION_DENIED and still
// serves reads.
func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	os.WriteFile(p("f"), []byte("data"), 0o644)
	os.Mkdir(p("d"), 0o755)
	sc := newClient(t, &Config{Options: Options{ReadOnly: true}})
	for name, op := range map[string]func() error{
		"create":       func() error { _, err := sc.Create(p("new")); return err },
		"open write":   func() error { _, err := sc.OpenFile(p("f"), os.O_WRONLY); return err },
		"open trunc":   func() error { _, err := sc.OpenFile(p("f"), os.O_RDONLY|os.O_TRUNC); return err },
		"remove":       func() error { return sc.Remove(p("f")) },
		"rmdir":        func() error { return sc.RemoveDirectory(p("d")) },
		"mkdir":        func() error { return sc.Mkdir(p("d2")) },
		"rename":       func() error { return sc.Rename(p("f"), p("g")) },
		"posix-rename": func() error { return sc.PosixRename(p("f"), p("g")) },
		"setstat":      func() error { return sc.Chmod(p("f"), 0o600) },
		"symlink":      func() error { return sc.Symlink("f", p("l")) },
		"hardlink":     func() error { return sc.Link(p("f"), p("h")) },
	} {
		if err := op(); !permDenied(err) {
			t.Errorf("%s under -R: %v, want permission denied", name, err)
		}
	}
	f, err := sc.Open(p("f"))
	if err != nil {
		t.Fatalf("read under -R: %v", err)
	}
	b := make([]byte, 4)
	if n, _ := f.Read(b); string(b[:n]) != "data" {
		t.Errorf("read %q", b[:n])
	}
	f.Close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("directory changed under -R: %d entries", len(ents))
	}
	if st, _ := os.Stat(p("f")); st.Mode().Perm() != 0o644 || st.Size() != 4 {
		t.Errorf("file changed under -R: %v", st)
	}
}

// TestAllowDenyLists: -P refuses the listed requests, -p serves only the
// listed ones; both answer PERMISSION_DENIED.
func TestAllowDenyLists(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	sc := newClient(t, &Config{Options: Options{Deny: []string{"remove", "mkdir"}}})
	if err := sc.Remove(filepath.Join(dir, "f")); !permDenied(err) {
		t.Errorf("denylisted remove: %v", err)
	}
	if err := sc.Mkdir(filepath.Join(dir, "d")); !permDenied(err) {
		t.Errorf("denylisted mkdir: %v", err)
	}
	if err := sc.Chmod(filepath.Join(dir, "f"), 0o600); err != nil {
		t.Errorf("setstat, not denylisted: %v", err)
	}
	sc = newClient(t, &Config{Options: Options{Allow: []string{"realpath", "stat", "lstat", "open", "read", "close"}}})
	if _, err := sc.Stat(filepath.Join(dir, "f")); err != nil {
		t.Errorf("allowlisted stat: %v", err)
	}
	if _, err := sc.ReadDir(dir); !permDenied(err) {
		t.Errorf("opendir, not allowlisted: %v", err)
	}
	if _, err := sc.StatVFS(dir); !permDenied(err) {
		t.Errorf("statvfs extension, not allowlisted: %v", err)
	}
}

// TestStartDirAndUmask: -d's tokens pick where relative paths start;
// files and directories get the requested mode masked by -u exactly,
// whatever the process umask.
func TestStartDirAndUmask(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "pub", "alice"), 0o755)
	old := syscall.Umask(0o077) // stricter than -u: must not leak through
	defer syscall.Umask(old)
	sc := newClient(t, &Config{User: "alice", Home: home,
		Options: Options{StartDir: "%d/pub/%u", Umask: mode(0o002)}})
	if wd, err := sc.Getwd(); err != nil || wd != filepath.Join(home, "pub", "alice") {
		t.Errorf("start directory %q %v", wd, err)
	}
	f, err := sc.OpenFile("new", os.O_WRONLY|os.O_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := sc.Mkdir("sub"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"new": 0o664, "sub": 0o775} {
		st, err := os.Stat(filepath.Join(home, "pub", "alice", name))
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %o", name, st.Mode(), err, want)
		}
	}
	// An existing file keeps its mode.
	os.WriteFile(filepath.Join(home, "old"), nil, 0o600)
	f, err = sc.OpenFile(filepath.Join(home, "old"), os.O_WRONLY|os.O_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st, _ := os.Stat(filepath.Join(home, "old")); st.Mode().Perm() != 0o600 {
		t.Errorf("existing file's mode changed to %v", st.Mode())
	}
	// A start directory that does not exist leaves the home directory.
	sc = newClient(t, &Config{Home: home, Options: Options{StartDir: "/nonexistent/%u"}})
	if wd, _ := sc.Getwd(); wd != home {
		t.Errorf("missing start directory: wd %q, want %q", wd, home)
	}
}

// TestRootConfinement: with Config.Root, "/" is the root, ".." stops
// there, links are resolved inside it (absolute ones from the root) and
// no request reaches a file outside.
func TestRootConfinement(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "jail")
	os.MkdirAll(filepath.Join(root, "home", "u"), 0o755)
	os.WriteFile(filepath.Join(base, "secret"), []byte("outside"), 0o644)
	os.WriteFile(filepath.Join(root, "inside"), []byte("inside"), 0o644)
	os.Symlink("/inside", filepath.Join(root, "abs"))                      // absolute, within the jail
	os.Symlink("../../secret", filepath.Join(root, "home", "up"))          // climbs out
	os.Symlink(filepath.Join(base, "secret"), filepath.Join(root, "host")) // a host path
	sc := newClient(t, &Config{Root: root, Home: "/home/u"})
	if wd, _ := sc.Getwd(); wd != "/home/u" {
		t.Errorf("wd %q, want /home/u", wd)
	}
	read := func(p string) string {
		f, err := sc.Open(p)
		if err != nil {
			return "error: " + err.Error()
		}
		defer f.Close()
		var b bytes.Buffer
		b.ReadFrom(f)
		return b.String()
	}
	for p, want := range map[string]string{
		"/inside":             "inside",
		"../../inside":        "inside",
		"/../../../../inside": "inside",
		"/abs":                "inside",
	} {
		if got := read(p); got != want {
			t.Errorf("read %s: %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"/home/up", "/host", "../../../secret", "/../secret"} {
		if got := read(p); strings.Contains(got, "outside") {
			t.Errorf("read %s escaped the root: %q", p, got)
		}
	}
	if rp, _ := sc.RealPath("/home/up"); strings.HasPrefix(rp, base) {
		t.Errorf("realpath shows a host path: %q", rp)
	}
	// Writes through a climbing link land inside (as in a chroot) or fail.
	if f, err := sc.Create("/home/up"); err == nil {
		f.Write([]byte("x"))
		f.Close()
	}
	if err := sc.Rename("/inside", "/../../moved"); err != nil {
		t.Errorf("rename within the root: %v", err)
	}
	if err := sc.Symlink("/etc/passwd", "/pw"); err != nil {
		t.Errorf("symlink: %v", err)
	}
	if got := read("/pw"); strings.Contains(got, "root:") {
		t.Errorf("a new link led out of the root")
	}
	if b, _ := os.ReadFile(filepath.Join(base, "secret")); string(b) != "outside" {
		t.Errorf("the file outside changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "moved")); err != nil {
		t.Errorf("renamed file not at the root: %v", err)
	}
	if ents, _ := os.ReadDir(base); len(ents) != 2 {
		t.Errorf("something was created outside the root: %d entries", len(ents))
	}
}

// extReply serves one extended request after INIT and returns the reply.
func extReply(t *testing.T, cfg *Config, reqs ...[]byte) [][]byte {
	t.Helper()
	out, _, err := runConfig(t, cfg, 0, append([][]byte{sftpInit}, reqs...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out[1:]
}

// names decodes a NAME reply's first entry.
func firstName(t *testing.T, p []byte) string {
	t.Helper()
	in := reader{b: p[1:]}
	in.u32()
	if p[0] != fxpName || in.u32() != 1 {
		t.Fatalf("reply type %d, want NAME with one entry", p[0])
	}
	return in.str()
}

func TestVersionExtensions(t *testing.T) {
	out, _, _ := runSFTP(t, 0, sftpInit)
	in := reader{b: out[0][5:]}
	var got []string
	for len(in.b) > 0 && !in.bad {
		got = append(got, in.str()+"="+in.str())
	}
	want := "posix-rename@openssh.com=1 statvfs@openssh.com=2 fstatvfs@openssh.com=2 hardlink@openssh.com=1 " +
		"fsync@openssh.com=1 lsetstat@openssh.com=1 limits@openssh.com=1 expand-path@openssh.com=1 " +
		"copy-data=1 home-directory=1 users-groups-by-id@openssh.com=1"
	if strings.Join(got, " ") != want {
		t.Errorf("VERSION extensions\n%s\nwant (OpenSSH 9.x's list)\n%s", strings.Join(got, " "), want)
	}
}

// TestDisallowedNotAnnounced: extensions -P or -R refuse are left out of
// VERSION, as OpenSSH's compose_extension does.
func TestDisallowedNotAnnounced(t *testing.T) {
	out, _, _ := runConfig(t, &Config{Options: Options{ReadOnly: true, Deny: []string{"limits"}}}, 0, sftpInit)
	v := string(out[0])
	for _, gone := range []string{"hardlink@", "posix-rename@", "lsetstat@", "copy-data", "fsync@", "limits@"} {
		if strings.Contains(v, gone) {
			t.Errorf("VERSION under -R -P limits announces %s", gone)
		}
	}
	if !strings.Contains(v, "statvfs@openssh.com") || !strings.Contains(v, "home-directory") {
		t.Errorf("VERSION lost read-only extensions: %q", v)
	}
}

func TestCopyData(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	os.WriteFile(src, []byte("0123456789"), 0o644)
	out := extReply(t, &Config{},
		sftpReq(fxpOpen, 1, src, fxfRead, 0),
		sftpReq(fxpOpen, 2, dst, fxfWrite|fxfCreat, 0),
		sftpReq(fxpExtended, 3, "copy-data", "1", uint64(2), uint64(5), "2", uint64(1)),
		sftpReq(fxpExtended, 4, "copy-data", "1", uint64(8), uint64(0), "2", uint64(6)), // to the end
		sftpReq(fxpExtended, 5, "copy-data", "1", uint64(0), uint64(0), "1", uint64(0)), // same handle
		sftpReq(fxpClose, 6, "2"))
	for i, want := range []uint32{fxOK, fxOK, fxFailure, fxOK} {
		if _, code := replyStatus(t, out[2+i]); code != want {
			t.Errorf("reply %d: code %d, want %d", i, code, want)
		}
	}
	if b, _ := os.ReadFile(dst); string(b) != "\x002345689" {
		t.Errorf("copied %q", b)
	}
	// A writable copy of the source refused too (same inode).
	out = extReply(t, &Config{},
		sftpReq(fxpOpen, 1, src, fxfRead, 0), sftpReq(fxpOpen, 2, src, fxfWrite, 0),
		sftpReq(fxpExtended, 3, "copy-data", "1", uint64(0), uint64(0), "2", uint64(0)))
	if _, code := replyStatus(t, out[2]); code != fxFailure {
		t.Errorf("copy-data onto the same file: code %d", code)
	}
}

func TestLsetstat(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "t"), filepath.Join(dir, "l")
	os.WriteFile(target, nil, 0o644)
	os.Symlink("t", link)
	out := extReply(t, &Config{},
		sftpReq(fxpExtended, 1, "lsetstat@openssh.com", link, attrACModTime, 1_000_000, 1_200_000_000),
		sftpReq(fxpExtended, 2, "lsetstat@openssh.com", link, attrSize, uint64(0)),
		sftpReq(fxpExtended, 3, "lsetstat@openssh.com", target, attrPermissions, 0o600))
	for i, want := range []uint32{fxOK, fxBadMessage, fxOK} {
		if _, code := replyStatus(t, out[i]); code != want {
			t.Errorf("reply %d: code %d, want %d", i, code, want)
		}
	}
	li, _ := os.Lstat(link)
	ti, _ := os.Stat(target)
	if li.ModTime().Unix() != 1_200_000_000 || ti.ModTime().Unix() == 1_200_000_000 {
		t.Errorf("link mtime %v, target mtime %v: the link itself should change", li.ModTime(), ti.ModTime())
	}
	if ti.Mode().Perm() != 0o600 {
		t.Errorf("lsetstat mode on a file: %v", ti.Mode())
	}
}

func TestUsersGroupsHomeExpand(t *testing.T) {
	root, err := user.LookupId("0")
	if err != nil {
		t.Skip("no uid 0 in the user database")
	}
	ids := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 0), 4_000_000_123)
	home := t.TempDir()
	os.Mkdir(filepath.Join(home, "sub"), 0o755)
	out := extReply(t, &Config{Home: home},
		sftpReq(fxpExtended, 1, "users-groups-by-id@openssh.com", string(ids), string(ids[:4])),
		sftpReq(fxpExtended, 2, "home-directory", ""),
		sftpReq(fxpExtended, 3, "home-directory", "root"),
		sftpReq(fxpExtended, 4, "home-directory", "no-such-user-offload"),
		sftpReq(fxpExtended, 5, "expand-path@openssh.com", "~/sub/../sub"),
		sftpReq(fxpExtended, 6, "expand-path@openssh.com", "~root"),
		sftpReq(fxpExtended, 7, "users-groups-by-id@openssh.com", "abc", ""))
	in := reader{b: out[0][5:]}
	users, groups := reader{b: in.bytes()}, reader{b: in.bytes()}
	if u0, u1 := users.str(), users.str(); u0 != root.Username || u1 != "" || users.bad {
		t.Errorf("users %q %q", u0, u1)
	}
	if g0 := groups.str(); g0 == "" || groups.bad {
		t.Errorf("group 0 unnamed")
	}
	if h := firstName(t, out[1]); h != home {
		t.Errorf("home-directory \"\" = %q", h)
	}
	if h := firstName(t, out[2]); h != root.HomeDir {
		t.Errorf("home-directory root = %q", h)
	}
	if _, code := replyStatus(t, out[3]); code != fxFailure {
		t.Errorf("home-directory of an unknown user: code %d", code)
	}
	if e := firstName(t, out[4]); e != filepath.Join(home, "sub") {
		t.Errorf("expand-path ~/sub/../sub = %q", e)
	}
	if e := firstName(t, out[5]); e != root.HomeDir {
		t.Errorf("expand-path ~root = %q", e)
	}
	if _, code := replyStatus(t, out[6]); code != fxBadMessage {
		t.Errorf("users-groups-by-id with a ragged id list: code %d", code)
	}
}

// recHandler records messages and the facility it was given.
type recHandler struct {
	msgs     *[]string
	facility string
}

func (h recHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recHandler) Handle(_ context.Context, r slog.Record) error {
	*h.msgs = append(*h.msgs, h.facility+" "+r.Message)
	return nil
}
func (h recHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recHandler) WithGroup(string) slog.Handler      { return h }
func (h recHandler) WithFacility(f string) slog.Handler { h.facility = f; return h }

// TestLogLevelAndFacility: at the default level nothing but errors is
// logged; at -l INFO every change, in OpenSSH's words, under -f's
// facility.
func TestLogLevelAndFacility(t *testing.T) {
	dir := t.TempDir()
	run := func(o Options) []string {
		var msgs []string
		extReply(t, &Config{Options: o, User: "u", Logger: slog.New(recHandler{msgs: &msgs})},
			sftpReq(fxpOpen, 1, filepath.Join(dir, "f"), fxfWrite|fxfCreat, attrPermissions, 0o640),
			sftpReq(fxpWrite, 2, "1", uint64(0), "abc"),
			sftpReq(fxpClose, 3, "1"),
			sftpReq(fxpMkdir, 4, filepath.Join(dir, "d"), 0),
			sftpReq(fxpRmdir, 5, filepath.Join(dir, "d")))
		return msgs
	}
	if msgs := run(Options{}); len(msgs) != 0 {
		t.Errorf("default level logged %q", msgs)
	}
	got := strings.Join(run(Options{LogLevel: "INFO", Facility: "LOCAL3"}), "\n")
	for _, want := range []string{
		"LOCAL3 session opened for local user u from [UNKNOWN]",
		`LOCAL3 open "` + dir + `/f" flags WRITE,CREATE mode 0640`,
		`LOCAL3 close "` + dir + `/f" bytes read 0 written 3`,
		`LOCAL3 mkdir name "` + dir + `/d" mode 0777`,
		`LOCAL3 rmdir name "` + dir + `/d"`,
		"LOCAL3 session closed for local user u from [UNKNOWN]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}
