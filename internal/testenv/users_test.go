package testenv

import (
	"os"
	"os/exec"
	"os/user"
	"reflect"
	"testing"
)

func TestStaleUsers(t *testing.T) {
	passwd := "root:x:0:0:root:/root:/bin/bash\n" +
		"oftdead:x:1001:1001:" + ownerStamp(41) + ":/home/oftdead:/bin/sh\n" +
		"oftlive:x:1002:1002:" + ownerStamp(42) + ":/home/oftlive:/bin/sh\n" +
		"oftbad:x:1003:1003:" + stampPrefix + "x:/home/oftbad:/bin/sh\n" +
		"alice:x:1004:1004:" + stampPrefix + ":/home/alice:/bin/sh\n" +
		"short:x:1005\n"
	alive := func(pid int) bool { return pid == 42 }
	if got, want := staleUsers(passwd, alive), []string{"oftdead"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("staleUsers = %q, want %q", got, want)
	}
}

// TestSweepStaleUsers leaves a user stamped with a process that has ended
// and one stamped with this process; the sweep removes only the first.
func TestSweepStaleUsers(t *testing.T) {
	Root(t)
	LookPath(t, "useradd", "Debian package passwd")
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := UniqueName("oft"), UniqueName("oft")
	for name, pid := range map[string]int{dead: cmd.Process.Pid, live: os.Getpid()} {
		if out, err := retryLocked("useradd", "-M", "-c", ownerStamp(pid), name); err != nil {
			t.Fatalf("useradd: %v: %s", err, out)
		}
		t.Cleanup(func() { retryLocked("userdel", "-f", name) })
	}
	sweepStaleUsers()
	if _, err := user.Lookup(dead); err == nil {
		t.Errorf("user %s of an ended process survived the sweep", dead)
	}
	if _, err := user.Lookup(live); err != nil {
		t.Errorf("user %s of this process was swept: %v", live, err)
	}
}
