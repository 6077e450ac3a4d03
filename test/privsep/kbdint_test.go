package privsep

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// kbdIntLogin logs a in with keyboard-interactive only, the answers
// coming from an SSH_ASKPASS program that prints answer for every prompt.
func (d *daemon) kbdIntLogin(a *account, answer string) (bool, string) {
	d.t.Helper()
	ask := filepath.Join(d.t.TempDir(), "askpass")
	os.WriteFile(ask, []byte(fmt.Sprintf("#!/bin/sh\necho '%s'\n", answer)), 0o700)
	ctx, cancel := testenv.Context(d.t)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ssh", "-F", "/dev/null", "-p", d.port, "-o", "PreferredAuthentications=keyboard-interactive",
		"-o", "NumberOfPasswordPrompts=1", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "LogLevel=ERROR", a.Username+"@127.0.0.1", "true")
	cmd.Env = append(os.Environ(), "SSH_ASKPASS="+ask, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	return cmd.Run() == nil, errb.String()
}

// Keyboard-interactive under privilege separation: the worker sends the
// monitor's prompts and carries the responses back (ipc TypeRespond),
// against the shadow database and through PAM.
func TestKeyboardInteractiveSeparated(t *testing.T) {
	a := newAccount(t)
	testenv.SetPassword(t, a.Username, "kbd-Secret-1")
	service := testenv.PAMService(t, "oftpam", "auth required pam_unix.so nodelay\naccount required pam_unix.so\nsession required pam_unix.so\n")
	for _, pam := range []string{"no", "yes"} {
		d := startDaemon(t, nil, "KbdInteractiveAuthentication yes", "UsePAM "+pam, "PAMServiceName "+service)
		if ok, out := d.kbdIntLogin(a, "kbd-Secret-1"); !ok {
			t.Fatalf("UsePAM %s: right password refused: %s\n%s", pam, out, d.log)
		}
		if ok, _ := d.kbdIntLogin(a, "wrong"); ok {
			t.Fatalf("UsePAM %s: wrong password accepted", pam)
		}
		if !strings.Contains(d.log.String(), "Accepted keyboard-interactive") {
			t.Errorf("UsePAM %s: log:\n%s", pam, d.log)
		}
	}
}

// The Banner reaches the client before the first answer under privilege
// separation too, where the worker's first request begins the login in
// the monitor and the banner comes back with its decision.
func TestBannerSeparated(t *testing.T) {
	a := newAccount(t)
	banner := filepath.Join(t.TempDir(), "banner")
	os.WriteFile(banner, []byte("separated banner: authorized use only\n"), 0o644)
	d := startDaemon(t, nil, "Banner "+banner)
	cmd := exec.Command("ssh", "-F", "/dev/null", "-p", d.port, "-i", a.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", a.Username+"@127.0.0.1", "echo in")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "in\n") {
		t.Fatalf("login: %v\n%s\n%s", err, out, d.log)
	}
	if !strings.Contains(string(out), "separated banner: authorized use only") {
		t.Errorf("the client did not show the banner:\n%s", out)
	}
}
