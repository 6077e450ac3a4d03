package privsep

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// TestPAMSessionInProcess: with PrivilegeSeparation no, UsePAM yes opens
// the PAM session once per connection before its first program, as
// OpenSSH does: the program sees pam_env's variable, pam_limits' nofile
// and pam_loginuid's login uid, while the daemon's own limits and login
// uid stay as they were; pam_exec records the open inside the session and
// the close once the connection has ended.
func TestPAMSessionInProcess(t *testing.T) {
	testenv.Root(t)
	dir, err := os.MkdirTemp("", "oftpamip") // the session reads the record as the user
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	envFile := filepath.Join(dir, "env")
	os.WriteFile(envFile, []byte("OFFLOAD_PAM_TEST=from-pam-env\n"), 0o644)
	a := newAccount(t)
	limits := filepath.Join(dir, "limits.conf")
	os.WriteFile(limits, []byte(a.Username+" hard nofile 777\n"+a.Username+" soft nofile 777\n"), 0o644)
	record := filepath.Join(dir, "record")
	script := filepath.Join(dir, "record.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho \"$PAM_TYPE $PAM_USER\" >> "+record+"\n"), 0o700)
	stack := "auth required pam_permit.so\naccount required pam_permit.so\n" +
		"session required pam_loginuid.so\n" +
		"session required pam_env.so envfile=" + envFile + " readenv=1 user_readenv=0\n" +
		"session required pam_limits.so conf=" + limits + "\n" +
		"session required pam_exec.so " + script + "\n"
	service := testenv.PAMService(t, "oftpam", stack)
	d := startDaemon(t, nil, "UsePAM yes", "PAMServiceName "+service, "PrivilegeSeparation no")
	pid := d.serverPid()
	loginuidBefore := readProc(t, pid, "loginuid")
	out := d.mustSSH(a, "echo $OFFLOAD_PAM_TEST; ulimit -Hn; cat /proc/self/loginuid; echo; cat "+record)
	f := strings.Fields(out)
	if len(f) < 5 || f[0] != "from-pam-env" || f[1] != "777" || f[2] != a.Uid || f[3] != "open_session" || f[4] != a.Username {
		t.Fatalf("session: %q, want pam_env's variable, nofile 777, loginuid %s and the open record\n%s", out, a.Uid, d.log)
	}
	if got := readProc(t, pid, "loginuid"); got != loginuidBefore {
		t.Errorf("the daemon's loginuid changed from %s to %s", loginuidBefore, got)
	}
	if lim := readProc(t, pid, "limits"); strings.Contains(lim, " 777 ") {
		t.Errorf("the daemon took the session's limits:\n%s", lim)
	}
	want := "open_session " + a.Username + "\nclose_session " + a.Username + "\n"
	var got []byte
	for i := 0; i < 100; i++ {
		if got, _ = os.ReadFile(record); string(got) == want {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if string(got) != want {
		t.Fatalf("PAM session record %q, want %q (one open, one close after the connection)\n%s", got, want, d.log)
	}
	// The daemon reaps the programs the keeper started: their exit
	// status reaches the client, on pipes and on a pty.
	if _, _, code := d.ssh(a, "exit 3"); code != 3 {
		t.Errorf("exit 3 in the session: the client saw %d", code)
	}
	if out := d.mustSSH(a, "tty; ulimit -Hn", "RequestTTY=force"); !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "777") {
		t.Errorf("pty session: %q, want a pts and nofile 777", out)
	}
}

func readProc(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
