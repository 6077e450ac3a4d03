package auth_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/pam"
)

// A PAM module that blocks without talking (pam_exec running sleep: an
// authentication server that does not answer) does not hold the client
// past LoginGraceTime, in the server in this process and in the real
// program with privilege separation and without. OpenSSH's alarm ends
// its per-connection process at that time.
func TestPAMBoundedByLoginGraceTime(t *testing.T) {
	testenv.Root(t)
	if !pam.Available {
		testenv.Missing(t, "PAM in this build", "build with cgo and libpam0g-dev")
	}
	sshpass := testenv.LookPath(t, "sshpass", "Debian package sshpass")
	sleep := testenv.FirstFile(t, "/bin/sleep", "Debian package coreutils", "/bin/sleep", "/usr/bin/sleep")
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-grace-1")
	service := testenv.PAMService(t, "oftslow",
		"auth requisite pam_exec.so quiet "+sleep+" 40\nauth required pam_unix.so\naccount required pam_unix.so\n")

	ports, logs := map[string]string{}, map[string]fmt.Stringer{}
	ports["in-process"], logs["in-process"] = offloadSSHD(t, &auth.Config{UsePAM: true, PAM: pam.Config{Service: service}, PasswordAuthentication: true, LoginGraceTime: 2 * time.Second})
	for _, sep := range []string{"yes", "no"} {
		d := startOffloadDaemon(t, f, nil, nil, "UsePAM yes", "PAMServiceName "+service, "PasswordAuthentication yes",
			"LoginGraceTime 2", "PrivilegeSeparation "+sep)
		ports["offload sshd, PrivilegeSeparation "+sep] = d.port
		logs["offload sshd, PrivilegeSeparation "+sep] = d.stderr
	}
	for name, port := range ports {
		start := time.Now()
		got := passwordOutcome(t, f, sshpass, port, u.Username, "pw-grace-1")
		// a bound on a hang, not a performance goal: the module sleeps 40 s
		if took := time.Since(start); took > 20*time.Second || got == "ok" {
			t.Errorf("%s: %q after %v with LoginGraceTime 2 and a PAM module that blocks 40 s", name, got, took.Round(time.Millisecond))
		} else {
			t.Logf("%s: %q after %v", name, got, took.Round(time.Millisecond))
		}
		// OpenSSH's words for it; the line may be written just after the
		// client saw the connection close
		want := "Timeout before authentication for 127.0.0.1 port "
		if !awaitLine(t, logs[name], want) {
			t.Errorf("%s: no %q line:\n%s", name, want, logs[name])
		}
	}
}
