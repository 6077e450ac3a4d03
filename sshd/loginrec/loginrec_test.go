package loginrec

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

func tempFiles(t *testing.T) Files {
	dir := t.TempDir()
	f := Files{Utmp: filepath.Join(dir, "utmp"), Wtmp: filepath.Join(dir, "wtmp"), Lastlog: filepath.Join(dir, "lastlog")}
	os.WriteFile(f.Wtmp, nil, 0o664)
	os.WriteFile(f.Lastlog, nil, 0o664)
	return f
}

var rec = Record{User: "alice", UID: 1000, PID: 4242, TTY: "/dev/pts/17", Host: "192.0.2.7",
	Addr: netip.MustParseAddr("192.0.2.7"), Time: time.Unix(1796300000, 250000000)}

func TestEntriesAsOpenSSHWritesThem(t *testing.T) {
	f := tempFiles(t)
	if _, err := f.Login(rec); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.Utmp)
	if len(b) != utmpSize {
		t.Fatalf("utmp has %d bytes", len(b))
	}
	e, _ := Unmarshal(b)
	want := Entry{Type: userProcess, PID: 4242, Line: "pts/17", ID: "s/17", User: "alice", Host: "192.0.2.7",
		Time: time.Unix(1796300000, 250000000), Addr: netip.MustParseAddr("192.0.2.7")}
	if *e != want {
		t.Fatalf("utmp entry %+v, want %+v", e, want)
	}
	if err := f.Logout(rec); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(f.Utmp)
	e, _ = Unmarshal(b) // changed in place: still one entry
	if len(b) != utmpSize || e.Type != deadProcess || e.Host != "" || e.User != "" || e.ID != "s/17" || e.Line != "pts/17" {
		t.Fatalf("after logout: %d bytes, %+v", len(b), e)
	}
	w, _ := os.ReadFile(f.Wtmp)
	if len(w) != 2*utmpSize {
		t.Fatalf("wtmp has %d bytes, want two entries", len(w))
	}
	if e, _ := Unmarshal(w[utmpSize:]); e.Type != deadProcess || e.Line != "pts/17" || e.User != "" || e.ID != "" {
		t.Fatalf("wtmp logout entry %+v", e)
	}
	// a second session on another pty gets its own utmp slot
	r2 := rec
	r2.TTY, r2.Addr = "/dev/pts/3", netip.MustParseAddr("2001:db8::1")
	f.Login(r2)
	b, _ = os.ReadFile(f.Utmp)
	e, _ = Unmarshal(b[utmpSize:])
	if len(b) != 2*utmpSize || e.ID != "ts/3" || e.Addr != r2.Addr {
		t.Fatalf("second session: %d bytes, %+v", len(b), e)
	}
}

// The system's own tools read what Login wrote.
func TestToolsReadTheFiles(t *testing.T) {
	who := testenv.LookPath(t, "who", "Debian package coreutils")
	last := testenv.LookPath(t, "last", "Debian package util-linux")
	f := tempFiles(t)
	r := rec
	r.Time = time.Now().Add(-time.Minute)
	f.Login(r)
	out, err := exec.Command(who, f.Utmp).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "alice") || !strings.Contains(string(out), "pts/17") || !strings.Contains(string(out), "192.0.2.7") {
		t.Fatalf("who: %v\n%s", err, out)
	}
	out, _ = exec.Command(last, "-f", f.Wtmp).CombinedOutput()
	// "still logged in", or "gone - no logout" when the process's
	// loginuid is not alice's (there is no alice here)
	if !strings.Contains(string(out), "alice") || !strings.Contains(string(out), "192.0.2.7") ||
		!(strings.Contains(string(out), "still logged in") || strings.Contains(string(out), "no logout")) {
		t.Fatalf("last before logout:\n%s", out)
	}
	r.Time = time.Now()
	f.Logout(r)
	out, _ = exec.Command(who, f.Utmp).CombinedOutput()
	if strings.Contains(string(out), "alice") {
		t.Fatalf("who after logout:\n%s", out)
	}
	out, _ = exec.Command(last, "-f", f.Wtmp).CombinedOutput()
	if !strings.Contains(string(out), "alice") || strings.Contains(string(out), "still logged in") || strings.Contains(string(out), "no logout") {
		t.Fatalf("last after logout:\n%s", out)
	}
}

func TestLastlog(t *testing.T) {
	f := tempFiles(t)
	prev, err := f.Login(rec)
	if err != nil || !prev.Time.IsZero() || prev.Message() != "" {
		t.Fatalf("first login: %+v, %v", prev, err)
	}
	r2 := rec
	r2.Time, r2.Host = rec.Time.Add(time.Hour), "client.example"
	prev, _ = f.Login(r2)
	if !prev.Time.Equal(time.Unix(rec.Time.Unix(), 0)) || prev.Host != "192.0.2.7" || prev.Line != "pts/17" {
		t.Fatalf("previous login %+v", prev)
	}
	want := "Last login: " + time.Unix(rec.Time.Unix(), 0).Format("Mon Jan _2 15:04:05 2006") + " from 192.0.2.7"
	if prev.Message() != want {
		t.Fatalf("%q, want %q", prev.Message(), want)
	}
	fi, _ := os.Stat(f.Lastlog)
	if fi.Size() != int64(rec.UID+1)*lastlogSize {
		t.Fatalf("lastlog size %d", fi.Size())
	}
}

// The system's lastlog command reads the entry (as root, with a throwaway
// user, whose entry is cleared afterwards).
func TestSystemLastlog(t *testing.T) {
	lastlog := testenv.LookPath(t, "lastlog", "Debian package login")
	testenv.FirstFile(t, LastlogFile, "a system lastlog file", LastlogFile)
	u := testenv.NewUser(t)
	var uid uint32
	for _, c := range u.Uid {
		uid = uid*10 + uint32(c-'0')
	}
	t.Cleanup(func() {
		fd, err := os.OpenFile(LastlogFile, os.O_WRONLY, 0)
		if err == nil {
			fd.WriteAt(make([]byte, lastlogSize), int64(uid)*lastlogSize)
			fd.Close()
		}
	})
	r := Record{User: u.Username, UID: uid, TTY: "/dev/pts/9", Host: "198.51.100.4", Time: time.Now()}
	if err := writeLastlog(LastlogFile, r); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(lastlog, "-u", u.Username).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "198.51.100.4") || !strings.Contains(string(out), "pts/9") {
		t.Fatalf("lastlog: %v\n%s", err, out)
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add(newEntry(rec, userProcess).Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= lastlogSize {
			parseLastlog(b[:lastlogSize])
		}
		e, err := Unmarshal(b)
		if err != nil {
			return
		}
		if len(e.Line) > lineSize || len(e.User) > nameSize || len(e.Host) > hostSize || len(e.ID) > idSize {
			t.Fatalf("field beyond its size: %+v", e)
		}
	})
}
