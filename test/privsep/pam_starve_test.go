package privsep

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
)

// hangingPAM installs a PAM service whose auth stack blocks 40 s (an
// authentication server that does not answer) and returns its name.
func hangingPAM(t *testing.T) string {
	t.Helper()
	sleep := testenv.FirstFile(t, "/bin/sleep", "Debian package coreutils", "/bin/sleep", "/usr/bin/sleep")
	return testenv.PAMService(t, "oftpam", "auth requisite pam_exec.so quiet "+sleep+" 40\nauth required pam_unix.so\n"+
		"account required pam_unix.so\nsession required pam_permit.so\n")
}

// openSSHNamed runs OpenSSH's sshd under the program name name (its PAM
// service) with the settings given, and returns its port and pid.
func openSSHNamed(t *testing.T, name string, lines ...string) (string, int) {
	t.Helper()
	bin := testenv.FirstFile(t, "/usr/sbin/sshd", "Debian package openssh-server", "/usr/sbin/sshd")
	os.MkdirAll("/run/sshd", 0o755)
	dir := t.TempDir()
	link := filepath.Join(dir, name)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	hostKey := filepath.Join(dir, "host_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	var log *sshtest.LogBuffer
	t.Cleanup(func() {
		if t.Failed() && log != nil {
			t.Logf("OpenSSH sshd log:\n%s", log)
		}
	})
	s := testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		cfg := append(append([]string(nil), lines...), "Port "+port, "ListenAddress 127.0.0.1", "HostKey "+hostKey, "PidFile none", "LogLevel VERBOSE")
		conf := filepath.Join(dir, "sshd_config")
		os.WriteFile(conf, []byte(strings.Join(cfg, "\n")+"\n"), 0o600)
		log = &sshtest.LogBuffer{}
		cmd := exec.Command(link, "-D", "-e", "-f", conf)
		cmd.Stdout, cmd.Stderr = log, log
		out := log
		return testenv.Launch{Cmd: cmd, Output: out, Listens: func() bool { return strings.Contains(out.String(), "Server listening on") }}
	})
	port, cmd := s.Port, s.Cmd
	return port, cmd.Process.Pid
}

// sleepers counts the sleep processes under pid (PAM conversations
// blocked in the hanging module).
func sleepers(pid int) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if strings.TrimSpace(string(comm)) != "sleep" {
			continue
		}
		for q := parentOf(p); q > 1; q = parentOf(q) {
			if q == pid {
				n++
				break
			}
		}
	}
	return n
}

// passwordFlood starts n password attempts from src that PAM will hold.
func passwordFlood(t *testing.T, port, src, user string, n int) {
	for range n {
		dl := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
		nc, err := dl.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		go func() {
			cfg := &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.Password("wrong")}, HostKeyCallback: ssh.InsecureIgnoreHostKey()}
			if c, _, _, err := ssh.NewClientConn(nc, "127.0.0.1:"+port, cfg); err == nil {
				c.Close()
			}
		}()
	}
}

// TestHangingPAMDoesNotStarveLogins: with a PAM auth module that hangs,
// a flood of password attempts from one address keeps a bounded number
// of conversations blocked in the monitor (the rest are refused at once)
// and public-key logins from another address go on being served, as
// OpenSSH 9.2 serves them on the same PAM stack.
func TestHangingPAMDoesNotStarveLogins(t *testing.T) {
	service := hangingPAM(t)
	a := newAccount(t)
	common := []string{"UsePAM yes", "PasswordAuthentication yes", "KbdInteractiveAuthentication no",
		"LoginGraceTime 60", "MaxStartups 100"}
	d := startDaemon(t, nil, append(common, "PAMServiceName "+service, "PreauthWorkers 1")...)
	refPort, refPid := openSSHNamed(t, service, common...)
	ref := &daemon{t: t, port: refPort}

	const flood, bound = 30, 16 // the monitor's bound per address (sshd/monitor/pamwork.go)
	passwordFlood(t, d.port, "127.0.0.2", a.Username, flood)
	waitLong(t, "the flood to be refused beyond the bound", func() bool {
		return strings.Count(d.log.String(), "too many waiting for PAM") >= flood-bound
	})
	if n := sleepers(d.serverPid()); n > bound {
		t.Errorf("%d PAM conversations blocked in offload's monitor for one address, want at most %d", n, bound)
	}
	passwordFlood(t, ref.port, "127.0.0.2", a.Username, flood)
	waitLong(t, "OpenSSH's conversations to block", func() bool { return sleepers(refPid) >= flood*3/4 })

	served := map[string]int{}
	for name, srv := range map[string]*daemon{"offload": d, "OpenSSH": ref} {
		for range 5 {
			if out, _, code := srv.ssh(a, "echo in", "BindAddress=127.0.0.3", "ConnectTimeout=20"); code == 0 && out == "in\n" {
				served[name]++
			}
		}
	}
	t.Logf("public-key logins served during the flood: %v", served)
	if served["offload"] < 5 || served["offload"] < served["OpenSSH"] {
		t.Errorf("offload served %d of 5 public-key logins during the flood, OpenSSH %d", served["offload"], served["OpenSSH"])
	}
}

// waitLong waits up to a minute for cond (a flood takes a while on a
// loaded machine).
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
