// Package privsep tests the process model of offload sshd as an
// administrator sees it: the real binary, run as root, with throwaway
// users and the OpenSSH client.
package privsep

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/offload/offload/internal/proctree"
	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
)

// daemon is a running offload sshd.
type daemon struct {
	t    *testing.T
	cmd  *exec.Cmd
	port string
	log  *sshtest.LogBuffer
	dir  string
}

// startDaemon runs offload sshd as root on a free loopback port with the
// configuration lines given (plus a host key and the port), and extra
// descriptors for it to inherit (fd 3 on).
func startDaemon(t *testing.T, extra []*os.File, lines ...string) *daemon {
	return startDaemonWith(t, nil, extra, lines...)
}

// startDaemonAs runs offload sshd as the ordinary user a, with its files
// in dir (a's own).
func startDaemonAs(t *testing.T, a *account, dir string, lines ...string) *daemon {
	t.Helper()
	return launch(t, a, dir, nil, nil, lines...)
}

// startDaemonWith is startDaemon with a wrapper command (prlimit, say)
// before the binary.
func startDaemonWith(t *testing.T, wrapper []string, extra []*os.File, lines ...string) *daemon {
	t.Helper()
	return launch(t, nil, t.TempDir(), wrapper, extra, lines...)
}

// startDaemonBinary is startDaemon with another build of the program.
func startDaemonBinary(t *testing.T, bin string, lines ...string) *daemon {
	t.Helper()
	return launchBinary(t, bin, nil, t.TempDir(), nil, nil, lines...)
}

// launch starts offload sshd (as a when it is not nil) with its files in
// dir.
func launch(t *testing.T, a *account, dir string, wrapper []string, extra []*os.File, lines ...string) *daemon {
	t.Helper()
	return launchBinary(t, "", a, dir, wrapper, extra, lines...)
}

// launchBinary is launch with the program bin ("": the test build).
func launchBinary(t *testing.T, bin string, a *account, dir string, wrapper []string, extra []*os.File, lines ...string) *daemon {
	t.Helper()
	testenv.Root(t)
	testenv.LookPath(t, "ssh", "Debian package openssh-client")
	if bin == "" {
		bin = testenv.OffloadBinary(t)
	}
	if a != nil { // the user must be able to run the program
		bin = copyBinary(t, bin, dir, a)
	}
	hostKey := filepath.Join(dir, "host_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	d := &daemon{t: t, dir: dir}
	t.Cleanup(d.logIfFailed) // after the server's stop
	s := testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		conf := filepath.Join(dir, "sshd_config")
		text := fmt.Sprintf("ListenAddress 127.0.0.1:%s\nHostKey %s\nLogLevel DEBUG\n%s\n", port, hostKey, strings.Join(lines, "\n"))
		os.WriteFile(conf, []byte(text), 0o600)
		d.port, d.log = port, &sshtest.LogBuffer{}
		argv := append(append([]string(nil), wrapper...), bin, "sshd", "-D", "-f", conf, "-e", "-shutdown-timeout", "2s")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = d.log, d.log
		cmd.ExtraFiles = extra
		if a != nil {
			gid, _ := strconv.Atoi(a.Gid)
			for _, p := range []string{hostKey, hostKey + ".pub", conf} {
				os.Chown(p, a.uid, gid)
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(gid)}}
			cmd.Dir = dir
		}
		log := d.log
		return testenv.Launch{Cmd: cmd, Output: log, Listens: func() bool { return strings.Contains(log.String(), "listening addr=127.0.0.1:"+port) }}
	})
	d.cmd = s.Cmd
	return d
}

// copyBinary copies the program where a may execute it.
func copyBinary(t *testing.T, bin, dir string, a *account) string {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "offload")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.Atoi(a.Gid)
	os.Chown(dir, a.uid, gid)
	os.Chown(p, a.uid, gid)
	return p
}

func (d *daemon) logIfFailed() {
	if d.t.Failed() && d.log != nil {
		d.t.Logf("offload sshd log:\n%s", d.log.String())
	}
}

// account is a throwaway user with a key the OpenSSH client logs in with.
type account struct {
	*user.User
	key string // private key file
	uid int
}

// newAccount creates a user with an authorized key (and extra useradd
// arguments, such as -G for groups).
func newAccount(t *testing.T, args ...string) *account {
	t.Helper()
	u := testenv.NewUser(t, args...)
	testenv.Run(t, "usermod", "-p", "*", u.Username) // no password, not locked ("!")
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, _ := os.ReadFile(key + ".pub")
	ssh := filepath.Join(u.HomeDir, ".ssh")
	os.MkdirAll(ssh, 0o700)
	os.WriteFile(filepath.Join(ssh, "authorized_keys"), pub, 0o600)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range []string{ssh, filepath.Join(ssh, "authorized_keys")} {
		os.Chown(p, uid, gid)
	}
	return &account{User: u, key: key, uid: uid}
}

// ssh runs the OpenSSH client as a for the command, returning stdout,
// stderr and the exit code.
func (d *daemon) ssh(a *account, command string, opts ...string) (string, string, int) {
	d.t.Helper()
	args := []string{"-p", d.port, "-i", a.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"}
	for _, o := range opts {
		args = append(args, "-o", o)
	}
	args = append(args, a.Username+"@127.0.0.1", command)
	cmd := exec.Command("ssh", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatalf("ssh: %v", err)
	}
	return out.String(), errb.String(), code
}

// mustSSH is ssh that must succeed.
func (d *daemon) mustSSH(a *account, command string, opts ...string) string {
	d.t.Helper()
	out, errs, code := d.ssh(a, command, opts...)
	if code != 0 {
		d.t.Fatalf("ssh %s %q: exit %d: %s", a.Username, command, code, errs)
	}
	return out
}

// children returns the pids of the daemon's children whose command line
// starts with prefix.
func (d *daemon) children(prefix string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.HasPrefix(string(cmdline), prefix) && parentOf(pid) == d.serverPid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// status returns the fields of /proc/PID/status.
func status(pid int) map[string]string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil
	}
	defer f.Close()
	m := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, _ := strings.Cut(s.Text(), ":")
		m[k] = strings.TrimSpace(v)
	}
	return m
}

// serverPid is the pid of offload sshd (which a wrapper such as prlimit
// execs in its own place).
func (d *daemon) serverPid() int { return d.cmd.Process.Pid }

func parentOf(pid int) int {
	s, _ := proctree.ReadStat("/proc", pid)
	return s.PPID
}

// firstField is the first of the whitespace-separated values of a status
// line (the real uid of "Uid:").
func firstField(v string) string {
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
