package auth_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/pam"
)

// accountUser is a throwaway account with a key in its authorized_keys
// (owned by it, modes OpenSSH's StrictModes accepts); useradd arguments
// are added to useradd's.
type accountUser struct {
	*user.User
	key string // private key path
}

func newAccountUser(t *testing.T, f *fixture, password string, useradd ...string) *accountUser {
	t.Helper()
	u := testenv.NewUser(t, useradd...)
	if password != "" {
		testenv.SetPassword(t, u.Username, password)
	}
	key := f.keygen("id_"+u.Username, "ed25519")
	ssh := filepath.Join(u.HomeDir, ".ssh")
	os.MkdirAll(ssh, 0o700)
	pub, _ := os.ReadFile(key + ".pub")
	os.WriteFile(filepath.Join(ssh, "authorized_keys"), pub, 0o600)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	os.Chown(ssh, uid, gid)
	os.Chown(filepath.Join(ssh, "authorized_keys"), uid, gid)
	return &accountUser{User: u, key: key}
}

// openSSHD runs OpenSSH's sshd on 127.0.0.1 with config lines added to a
// minimal configuration; it returns the port and the log (-e).
func openSSHD(t *testing.T, f *fixture, lines ...string) (string, *sshtest.LogBuffer) {
	t.Helper()
	bin := testenv.FirstFile(t, "/usr/sbin/sshd", "Debian package openssh-server", "/usr/sbin/sshd")
	os.MkdirAll("/run/sshd", 0o755) // its privilege separation directory
	hostKey := filepath.Join(f.dir, "ssh_host_ed25519_key")
	if _, err := os.Stat(hostKey); err != nil {
		f.run(f.gen, "-q", "-t", "ed25519", "-N", "", "-f", hostKey)
	}
	var log *sshtest.LogBuffer
	s := testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		// the first setting of a keyword wins: lines come before the defaults
		cfg := append(append([]string(nil), lines...), "Port "+port, "ListenAddress 127.0.0.1", "HostKey "+hostKey,
			"PidFile none", "LogLevel VERBOSE", "AuthorizedKeysFile .ssh/authorized_keys")
		path := filepath.Join(f.dir, "sshd_config."+port)
		os.WriteFile(path, []byte(strings.Join(cfg, "\n")+"\n"), 0o600)
		log = &sshtest.LogBuffer{}
		cmd := f.command(bin, "-D", "-e", "-f", path)
		cmd.Stdout, cmd.Stderr = log, log
		// its own line, not a probe: a connection closed before the
		// identification is logged, and would be one more line to compare
		return testenv.Launch{Cmd: cmd, Output: log, Listens: func() bool { return strings.Contains(log.String(), "Server listening on") }}
	})
	return s.Port, log
}

// offloadSSHD serves a with offload's server in this process; the log
// is a.Logger's when set.
func offloadSSHD(t *testing.T, a *auth.Config) (string, *sshtest.LogBuffer) {
	t.Helper()
	logs := &sshtest.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if a.Logger == nil {
		a.Logger = log
	} else {
		log = a.Logger
	}
	srv, err := sshd.NewServer(&sshd.Config{Auth: a, Logger: log, Conn: &connection.Config{}, LoginGraceTime: a.LoginGraceTime})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return port, logs
}

// outcome runs `ssh -i key user@127.0.0.1 -p port true` and names what
// happened: "ok", "denied", "closed", "password change" or "exit N".
func outcome(t *testing.T, f *fixture, port, name, key string, opts ...string) string {
	t.Helper()
	args := []string{"-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"}
	for _, o := range opts {
		args = append(args, "-o", o)
	}
	return runOutcome(t, nil, f.ssh, sshArgs(port, name, args...)...)
}

// passwordOutcome is outcome for a password login (sshpass gives the
// password through the environment).
func passwordOutcome(t *testing.T, f *fixture, sshpass, port, name, password string) string {
	t.Helper()
	args := append([]string{"-e", f.ssh}, sshArgs(port, name, "-o", "PreferredAuthentications=password",
		"-o", "PubkeyAuthentication=no", "-o", "NumberOfPasswordPrompts=1")...)
	return runOutcome(t, append(os.Environ(), "SSHPASS="+password), sshpass, args...)
}

func sshArgs(port, name string, extra ...string) []string {
	args := append([]string{"-F", "/dev/null", "-p", port, "-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10"}, extra...)
	return append(args, "-l", name, "127.0.0.1", "true")
}

func runOutcome(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	// The bound only stops a hung client; a login through Debian's PAM
	// stack took over 30 s on a machine with a load of 45.
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: no outcome in 3 minutes: %s", name, args, stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	switch {
	case strings.Contains(stderr.String(), "Password change required"):
		return "password change"
	case code == 0:
		return "ok"
	case code == 255 && strings.Contains(stderr.String(), "Permission denied"):
		return "denied"
	case code == 255:
		// OpenSSH closes the connection (a fatal error in pre-auth);
		// offload sends SSH_MSG_DISCONNECT saying why first
		return "closed"
	}
	return fmt.Sprintf("exit %d: %s", code, strings.TrimSpace(stderr.String()))
}

// TestAccountStatesLikeOpenSSH logs in with a key and with a password to
// accounts expired
// (chage -E 0), locked (usermod -L), with a missing shell, and with an
// expired password (chage -d 0), with OpenSSH's sshd and offload side by
// side, with and without PAM (Debian's /etc/pam.d/sshd), and wants the
// same outcome from each: offload as the server in this process and as
// the real program under privilege separation.
func TestAccountStatesLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	if !pam.Available {
		testenv.Missing(t, "PAM in this build", "build with cgo and libpam0g-dev")
	}
	f := newFixture(t)
	sshpass := testenv.LookPath(t, "sshpass", "Debian package sshpass")
	states := []struct {
		name string
		cmd  []string // with the user name appended
	}{
		{"normal", nil},
		{"expired account", []string{"chage", "-E", "0"}},
		{"locked", []string{"usermod", "-L"}},
		{"missing shell", []string{"usermod", "-s", "/nonexistent"}},
		{"expired password", []string{"chage", "-d", "0"}},
	}
	for _, usePAM := range []bool{false, true} {
		yesno := map[bool]string{false: "no", true: "yes"}[usePAM]
		oport, olog := openSSHD(t, f, "UsePAM "+yesno, "PasswordAuthentication yes", "KbdInteractiveAuthentication no")
		fport, flog := offloadSSHD(t, &auth.Config{UsePAM: usePAM, PasswordAuthentication: true})
		// the real program too, where the monitor decides (privilege
		// separation, its default)
		d := startOffloadDaemon(t, f, nil, nil, "UsePAM "+yesno, "PasswordAuthentication yes", "KbdInteractiveAuthentication no", "LogLevel VERBOSE")
		for _, st := range states {
			u := newAccountUser(t, f, "pw-"+st.name)
			if st.cmd != nil {
				testenv.Run(t, st.cmd[0], append(st.cmd[1:], u.Username)...)
			}
			for _, m := range []string{"publickey", "password"} {
				// the logins wait out PAM's failure delays: in parallel
				t.Run("UsePAM "+yesno+"/"+st.name+"/"+m, func(t *testing.T) {
					t.Parallel()
					login := func(port string) string {
						if m == "password" {
							return passwordOutcome(t, f, sshpass, port, u.Username, "pw-"+st.name)
						}
						return outcome(t, f, port, u.Username, u.key)
					}
					want, got, gotd := login(oport), login(fport), login(d.port)
					t.Logf("OpenSSH %q, offload %q, offload sshd %q", want, got, gotd)
					if got != want {
						t.Errorf("offload %q, OpenSSH %q\nOpenSSH log:\n%s\noffload log:\n%s", got, want, olog, flog)
					}
					if gotd != want {
						t.Errorf("offload sshd %q, OpenSSH %q\nOpenSSH log:\n%s\noffload sshd log:\n%s", gotd, want, olog, d.stderr)
					}
				})
			}
		}
	}
}
