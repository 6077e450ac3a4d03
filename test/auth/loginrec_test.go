package auth_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/loginrec"
)

// wtmpEntries reads the entries of wtmp from byte offset off on.
func wtmpEntries(t *testing.T, path string, off int64) []*loginrec.Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*loginrec.Entry
	for i := off; i+384 <= int64(len(b)); i += 384 {
		e, err := loginrec.Unmarshal(b[i : i+384])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestLoginRecordsLikeOpenSSH logs in on a pty through OpenSSH's sshd
// (UsePAM no: its own loginrec code writes wtmp), and wants loginrec to
// write the same login and logout entries for the same session.
func TestLoginRecordsLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	wtmp := testenv.FirstFile(t, loginrec.WtmpFile, "the system's wtmp", loginrec.WtmpFile)
	if _, err := os.Stat(loginrec.UtmpFile); err != nil {
		// systemd-tmpfiles makes it at boot; without it glibc's logout,
		// which OpenSSH on Debian uses, records nothing
		if err := os.WriteFile(loginrec.UtmpFile, nil, 0o664); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(loginrec.UtmpFile) })
	}
	f := newFixture(t)
	u := newAccountUser(t, f, "unlocked-pw") // useradd leaves "!": locked without PAM
	port, _ := openSSHD(t, f, "UsePAM no", "PasswordAuthentication no")
	fi, _ := os.Stat(wtmp)
	start := fi.Size() - fi.Size()%384
	if got := outcome(t, f, port, u.Username, u.key, "RequestTTY=force"); got != "ok" {
		t.Fatalf("pty login through OpenSSH: %s", got)
	}
	var login, logout *loginrec.Entry
	for i := 0; i < 50 && logout == nil; i++ {
		time.Sleep(50 * time.Millisecond)
		for _, e := range wtmpEntries(t, wtmp, start) {
			switch {
			case e.Type == 7 && e.User == u.Username:
				login = e
			case e.Type == 8 && login != nil && e.Line == login.Line:
				logout = e
			}
		}
	}
	if login == nil || logout == nil {
		t.Fatalf("OpenSSH wrote no login/logout pair to %s for %s", wtmp, u.Username)
	}

	dir := t.TempDir()
	files := loginrec.Files{Utmp: filepath.Join(dir, "utmp"), Wtmp: filepath.Join(dir, "wtmp"), Lastlog: filepath.Join(dir, "lastlog")}
	os.WriteFile(files.Wtmp, nil, 0o664)
	r := loginrec.Record{User: u.Username, PID: int(login.PID), TTY: "/dev/" + login.Line, Host: "127.0.0.1",
		Addr: netip.MustParseAddr("127.0.0.1"), Time: login.Time}
	files.Login(r)
	r.Time = logout.Time
	files.Logout(r)
	ours := wtmpEntries(t, files.Wtmp, 0)
	if len(ours) != 2 {
		t.Fatalf("loginrec wrote %d wtmp entries", len(ours))
	}
	for i, pair := range [][2]*loginrec.Entry{{login, ours[0]}, {logout, ours[1]}} {
		want, got := *pair[0], *pair[1]
		want.PID, got.PID = 0, 0 // OpenSSH's logout entry carries its own process's pid
		if got != want {
			t.Errorf("entry %d: loginrec %+v, OpenSSH %+v", i, got, want)
		}
	}
}
