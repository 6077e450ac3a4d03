package auth_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/pam"
)

const oathKey = "3132333435363738393031323334353637383930"

// pamOATH writes a throwaway PAM service: pam_unix's password, then
// pam_oath's one-time password (HOTP) for user; it returns the service
// name and a function giving the code for a counter.
func pamOATH(t *testing.T, user string) (string, func(n int) string) {
	t.Helper()
	if !pam.Available {
		testenv.Missing(t, "PAM in this build", "build with cgo and libpam0g-dev")
	}
	testenv.FirstFile(t, "pam_oath.so", "Debian package libpam-oath", "/usr/lib/x86_64-linux-gnu/security/pam_oath.so", "/lib/x86_64-linux-gnu/security/pam_oath.so", "/usr/lib/aarch64-linux-gnu/security/pam_oath.so")
	oathtool := testenv.LookPath(t, "oathtool", "Debian package oathtool")
	dir := t.TempDir()
	users := filepath.Join(dir, "users.oath")
	os.WriteFile(users, []byte(fmt.Sprintf("HOTP %s - %s\n", user, oathKey)), 0o600)
	name := testenv.PAMService(t, "oftpam", "auth requisite pam_unix.so nodelay\nauth required pam_oath.so usersfile="+users+" window=20\n"+
		"account required pam_unix.so\nsession required pam_unix.so\n")
	return name, func(n int) string {
		out, err := exec.Command(oathtool, "-c", fmt.Sprint(n), oathKey).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
}

// askpass writes an SSH_ASKPASS program answering the password prompt
// with password and the one-time password prompt with code.
func askpass(t *testing.T, dir, password, code string) string {
	p := filepath.Join(dir, "askpass-"+code)
	body := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in *One-time*) echo %s ;; *) echo '%s' ;; esac\n", code, password)
	os.WriteFile(p, []byte(body), 0o700)
	return p
}

// interactiveLogin runs the OpenSSH client with only the methods given,
// the answers from askpass; it reports whether `true` ran.
func interactiveLogin(t *testing.T, f *fixture, port, user, askpass, methods string, extra ...string) (bool, string) {
	t.Helper()
	args := []string{"-F", "/dev/null", "-p", port, "-o", "PreferredAuthentications=" + methods,
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-o", "NumberOfPasswordPrompts=1", "-o", "IdentitiesOnly=yes"}
	args = append(append(args, extra...), "-l", user, "127.0.0.1", "true")
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.ssh, args...)
	cmd.Env = append(os.Environ(), "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

// keyboard-interactive through PAM (password, then pam_oath's one-time
// password) and password through PAM, with the OpenSSH client.
func TestKeyboardInteractivePAMWithOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "first-factor")
	service, code := pamOATH(t, u.Username)
	port, logs := offloadSSHD(t, &auth.Config{UsePAM: true, PAM: pam.Config{Service: service},
		KbdInteractiveAuthentication: true, PasswordAuthentication: true})
	if ok, out := interactiveLogin(t, f, port, u.Username, askpass(t, f.dir, "first-factor", code(0)), "keyboard-interactive"); !ok {
		t.Fatalf("password and OTP: %s\n%s", out, logs)
	}
	if ok, _ := interactiveLogin(t, f, port, u.Username, askpass(t, f.dir, "first-factor", "000000"), "keyboard-interactive"); ok {
		t.Fatal("a wrong one-time password logged in")
	}
	if ok, _ := interactiveLogin(t, f, port, u.Username, askpass(t, f.dir, "wrong", code(1)), "keyboard-interactive"); ok {
		t.Fatal("a wrong password logged in")
	}
	if !awaitLine(t, logs, "Accepted keyboard-interactive/pam for "+u.Username) ||
		!awaitLine(t, logs, "Failed keyboard-interactive/pam for "+u.Username) {
		t.Errorf("log:\n%s", logs)
	}
	// this test program does not call sshd.RunChild, so the in-process
	// server cannot start a PAM keeper: it says so and runs the
	// session without one (never this binary started again)
	if !strings.Contains(logs.String(), "does not call sshd.RunChild") {
		t.Errorf("no warning that the PAM session is left out:\n%s", logs)
	}
	// the password method has no prompt for pam_oath's question: it fails
	if ok, _ := interactiveLogin(t, f, port, u.Username, askpass(t, f.dir, "first-factor", code(2)), "password"); ok {
		t.Fatal("password alone passed a two-prompt PAM stack")
	}
}

// AuthenticationMethods publickey,keyboard-interactive: the key alone is a
// partial success; key then PAM's prompts log in.
func TestAuthenticationMethodsWithOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "first-factor")
	service, code := pamOATH(t, u.Username)
	port, logs := offloadSSHD(t, &auth.Config{UsePAM: true, PAM: pam.Config{Service: service},
		KbdInteractiveAuthentication: true, AuthenticationMethods: [][]string{{"publickey", "keyboard-interactive"}}})
	if ok, _ := interactiveLogin(t, f, port, u.Username, askpass(t, f.dir, "x", "x"), "publickey", "-i", u.key); ok {
		t.Fatal("the key alone logged in")
	}
	if ok, _ := interactiveLogin(t, f, port, u.Username, askpass(t, f.dir, "first-factor", code(0)), "keyboard-interactive"); ok {
		t.Fatal("keyboard-interactive alone logged in")
	}
	ok, out := interactiveLogin(t, f, port, u.Username, askpass(t, f.dir, "first-factor", code(1)), "publickey,keyboard-interactive", "-i", u.key)
	if !ok {
		t.Fatalf("key and OTP: %s\n%s", out, logs)
	}
	if !awaitLine(t, logs, "Partial publickey for "+u.Username) {
		t.Errorf("log:\n%s", logs)
	}
}

// paramiko's auth_password and auth_interactive against the shadow
// database (no PAM), in process, and through offload sshd (privilege
// separation) with and without PAM (Debian's /etc/pam.d/sshd).
func TestPasswordAndKbdIntWithParamiko(t *testing.T) {
	testenv.Root(t)
	py := testenv.LookPath(t, "/usr/bin/python3", "Debian package python3")
	if exec.Command(py, "-c", "import paramiko").Run() != nil {
		testenv.Missing(t, "paramiko", "Debian package python3-paramiko")
	}
	f := newFixture(t)
	u := newAccountUser(t, f, "p@ss word")
	ports, logs := map[string]string{}, map[string]fmt.Stringer{}
	ports["in-process"], logs["in-process"] = offloadSSHD(t, &auth.Config{PasswordAuthentication: true, KbdInteractiveAuthentication: true})
	for _, usePAM := range []string{"no", "yes"} {
		d := startOffloadDaemon(t, f, nil, nil, "PasswordAuthentication yes", "KbdInteractiveAuthentication yes", "UsePAM "+usePAM)
		ports["offload sshd, UsePAM "+usePAM], logs["offload sshd, UsePAM "+usePAM] = d.port, d.stderr
	}
	prog := `
import os, sys, paramiko
def attempt(mode, pw):
    t = paramiko.Transport(("127.0.0.1", int(os.environ["PORT"])))
    t.start_client(timeout=10)
    try:
        if mode == "password":
            t.auth_password(os.environ["USERNAME"], pw)
        else:
            t.auth_interactive(os.environ["USERNAME"], lambda title, instr, prompts: [pw for _ in prompts])
        return t.is_authenticated()
    except paramiko.AuthenticationException:
        return False
    finally:
        t.close()
print(attempt("password", os.environ["PW"]), attempt("password", "nope"),
      attempt("interactive", os.environ["PW"]), attempt("interactive", "nope"))
`
	for name, port := range ports {
		cmd := exec.Command(py, "-c", prog)
		cmd.Env = append(os.Environ(), "PORT="+port, "USERNAME="+u.Username, "PW=p@ss word")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "True False True False" {
			t.Errorf("%s: paramiko: %v\n%s\n%s", name, err, out, logs[name])
		}
	}
}

// An expired password (chage -d 0) under PAM: keyboard-interactive asks
// for the current and a new password (pam_unix's password stack) and
// logs in; the new password works afterwards, as with OpenSSH.
func TestExpiredPasswordChangeOverKbdInt(t *testing.T) {
	testenv.Root(t)
	if !pam.Available {
		testenv.Missing(t, "PAM in this build", "build with cgo and libpam0g-dev")
	}
	f := newFixture(t)
	u := newAccountUser(t, f, "old-Secret-1")
	testenv.Run(t, "chage", "-d", "0", u.Username)
	name := testenv.PAMService(t, "oftpam", "auth required pam_unix.so nodelay\naccount required pam_unix.so\npassword required pam_unix.so yescrypt\nsession required pam_unix.so\n")
	port, logs := offloadSSHD(t, &auth.Config{UsePAM: true, PAM: pam.Config{Service: name}, KbdInteractiveAuthentication: true})
	changeAndLogIn(t, f, u, port, "old-Secret-1", "new-Secret-2", logs)
	// the same through offload sshd, where the monitor runs PAM's
	// password stack and the worker carries the prompts
	testenv.Run(t, "chage", "-d", "0", u.Username)
	d := startOffloadDaemon(t, f, nil, nil, "UsePAM yes", "PAMServiceName "+name, "KbdInteractiveAuthentication yes")
	changeAndLogIn(t, f, u, d.port, "new-Secret-2", "new-Secret-3", d.stderr)
}

// changeAndLogIn logs u in over keyboard-interactive changing its expired
// password from old to new, then logs in with new.
func changeAndLogIn(t *testing.T, f *fixture, u *accountUser, port, old, new string, logs fmt.Stringer) {
	t.Helper()
	ask := filepath.Join(f.dir, "askpass-change-"+new)
	os.WriteFile(ask, []byte("#!/bin/sh\ncase \"$1\" in *New*|*new*) echo '"+new+"' ;; *) echo '"+old+"' ;; esac\n"), 0o700)
	if ok, out := interactiveLogin(t, f, port, u.Username, ask, "keyboard-interactive"); !ok {
		t.Fatalf("login with a password change: %s\n%s", out, logs)
	}
	ask2 := askpass(t, f.dir, new, "none")
	if ok, out := interactiveLogin(t, f, port, u.Username, ask2, "keyboard-interactive"); !ok {
		t.Fatalf("login with the new password: %s\n%s", out, logs)
	}
}
