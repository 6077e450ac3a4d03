package connection

import (
	"bytes"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"github.com/pkg/sftp"

	"github.com/offload/offload/sshd/perm"

	"github.com/offload/offload/sshd/wire"
)

func sftpClient(t *testing.T, c *client) *sftp.Client {
	t.Helper()
	ch := c.session(t)
	if !ch.req("subsystem", true, wire.AppendString(nil, "sftp")) {
		t.Fatal("sftp subsystem refused")
	}
	sc, err := sftp.NewClientPipe(ch, ch)
	if err != nil {
		t.Fatalf("sftp client: %v", err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc
}

func testSFTP(t *testing.T) {
	c := startClient(t, nil, self(t))
	sc := sftpClient(t, c)
	dir := t.TempDir()
	data := make([]byte, 3<<20+17)
	rand.Read(data)
	f, err := sc.Create(filepath.Join(dir, "up"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, "up")); !bytes.Equal(got, data) {
		t.Fatalf("uploaded file differs")
	}
	g, err := sc.Open(filepath.Join(dir, "up"))
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(g)
	g.Close()
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("download differs (%d bytes, %v)", len(back), err)
	}
	batch(t, sc, dir)
}

// batch does what an sftp batch file would: mkdir, rename, chmod, ls, rm.
func batch(t *testing.T, sc *sftp.Client, dir string) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(sc.Mkdir(filepath.Join(dir, "d")))
	must(sc.Rename(filepath.Join(dir, "up"), filepath.Join(dir, "d", "moved")))
	must(sc.Chmod(filepath.Join(dir, "d", "moved"), 0o600))
	st, err := os.Stat(filepath.Join(dir, "d", "moved"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("chmod: %v %v", st.Mode(), err)
	}
	infos, err := sc.ReadDir(dir)
	must(err)
	var names []string
	for _, fi := range infos {
		names = append(names, fi.Name())
	}
	sort.Strings(names)
	if len(names) != 1 || names[0] != "d" {
		t.Errorf("ls: %v", names)
	}
	must(sc.Remove(filepath.Join(dir, "d", "moved")))
	must(sc.RemoveDirectory(filepath.Join(dir, "d")))
}

func TestSFTPInProcess(t *testing.T) { testSFTP(t) }

// TestSFTPHelper serves SFTP from a child (this test binary, see
// TestMain), as the server does when it must switch users.
func TestSFTPHelper(t *testing.T) {
	sftpAlwaysHelper = true
	defer func() { sftpAlwaysHelper = false }()
	exe, _ := os.Executable()
	c := startClient(t, &Config{SFTPHelper: testHelper(exe)}, self(t))
	sc := sftpClient(t, c)
	dir := t.TempDir()
	f, err := sc.Create(filepath.Join(dir, "up"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("via the helper"))
	f.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, "up")); string(got) != "via the helper" {
		t.Fatalf("uploaded %q", got)
	}
	batch(t, sc, dir)
}

// TestSFTPHelperMissing: without a helper, internal-sftp for a user the
// connection layer does not run as is refused, not served as root.
func TestSFTPHelperMissing(t *testing.T) {
	sftpAlwaysHelper = true
	defer func() { sftpAlwaysHelper = false }()
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	if ch.req("subsystem", true, wire.AppendString(nil, "sftp")) {
		t.Errorf("internal-sftp served without a helper")
	}
}

func TestUnknownSubsystem(t *testing.T) {
	c := startClient(t, nil, self(t))
	ch := c.session(t)
	if ch.req("subsystem", true, wire.AppendString(nil, "nope")) {
		t.Errorf("unknown subsystem accepted")
	}
}

// TestSFTPHelperAsNobody serves SFTP to the nobody account from a root
// server: the helper child runs as nobody, so files it creates belong to
// nobody and root's files are out of reach.
func TestSFTPHelperAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	a, err := lookupAccount("nobody", 0)
	if err != nil {
		t.Skipf("no nobody account: %v", err)
	}
	// The helper must be executable by nobody: copy this test binary to
	// a directory everyone may enter.
	dir, err := os.MkdirTemp("", "offload-sftp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	exe, _ := os.Executable()
	bin, _ := os.ReadFile(exe)
	helper := filepath.Join(dir, "helper")
	if err := os.WriteFile(helper, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("root only"), 0o600)
	cfg := &Config{SFTPHelper: testHelper(helper)}
	c := startClient(t, cfg, &perm.Permissions{User: "nobody"})
	sc := sftpClient(t, c)
	f, err := sc.Create(filepath.Join(dir, "made"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	f.Close()
	st, err := os.Stat(filepath.Join(dir, "made"))
	if err != nil || st.Sys().(*syscall.Stat_t).Uid != a.uid {
		t.Errorf("file made through SFTP: %v, owner %v, want uid %d", err, st.Sys(), a.uid)
	}
	if _, err := sc.Open(secret); err == nil {
		t.Errorf("nobody read a root-only file over SFTP")
	}
}

func TestInternalSFTPWithOptions(t *testing.T) {
	c := startClient(t, &Config{Subsystems: map[string]string{"sftp": "internal-sftp -u 022"}}, self(t))
	sc := sftpClient(t, c)
	if _, err := sc.Getwd(); err != nil {
		t.Errorf("internal-sftp with options: %v", err)
	}
}

func TestForcedInternalSFTP(t *testing.T) {
	p := self(t)
	p.ForceCommand = "internal-sftp"
	c := startClient(t, nil, p)
	// As OpenSSH: anything but a subsystem is refused with a message.
	ch := run(t, c, "echo not-run", nil)
	if got := ch.stdout.String(); got != "This service allows sftp connections only.\n" || ch.exitStatus != 1 {
		t.Errorf("exec under a forced internal-sftp: %q, status %d", got, ch.exitStatus)
	}
	// A subsystem request gets SFTP, whichever subsystem it names.
	ch = c.session(t)
	if !ch.req("subsystem", true, wire.AppendString(nil, "sftp")) {
		t.Fatal("subsystem refused")
	}
	sc, err := sftp.NewClientPipe(ch, ch)
	if err != nil {
		t.Fatalf("sftp over a forced internal-sftp: %v", err)
	}
	sc.Close()
}
