package loginrec_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/offload/offload/sshd/loginrec"
)

func Example() {
	dir, _ := os.MkdirTemp("", "loginrec")
	defer os.RemoveAll(dir)
	f := loginrec.Files{Utmp: filepath.Join(dir, "utmp"), Wtmp: filepath.Join(dir, "wtmp"), Lastlog: filepath.Join(dir, "lastlog")}
	os.WriteFile(f.Lastlog, nil, 0o664) // wtmp and lastlog are written where they exist

	r := loginrec.Record{User: "alice", UID: 1000, PID: 4242, TTY: "/dev/pts/3", Host: "192.0.2.7",
		Addr: netip.MustParseAddr("192.0.2.7"), Time: time.Date(2026, 12, 3, 9, 5, 7, 0, time.Local)}
	f.Login(r) // the first login: nothing to print
	r.Time = r.Time.Add(time.Hour)
	prev, _ := f.Login(r)
	fmt.Println(prev.Message()) // PrintLastLog
	f.Logout(r)
	// Output: Last login: Thu Dec  3 09:05:07 2026 from 192.0.2.7
}
