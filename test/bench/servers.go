package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/offload/offload/internal/proctree"
	"github.com/offload/offload/test/bench/internal/login"
)

// Server names.
const (
	srvOpenSSH   = "openssh"
	srvOffload   = "offload"
	srvSoftware  = "offload-software"
	srvPKCS11    = "offload-pkcs11"
	srvWindow    = "offload-win8m"
	srvInProc    = "offload-inproc"
	srvClientSel = "offload-clientsel"
)

// bigWindow is the window offload grants clients other than OpenSSH's;
// the offload-win8m server grants it to every client, OpenSSH's included,
// to show why ChannelWindowSize auto does not.
const bigWindow = 8 << 20

// Algorithms both servers are configured with, so the only difference is
// the implementation.
const (
	kexAlg     = login.KexAlgorithm
	hostKeyAlg = login.HostKeyAlgorithm
	etmMAC     = "hmac-sha2-256-etm@openssh.com"
	// kexAlgLibSSH is kexAlg's old name, for the paramiko rows.
	kexAlgLibSSH = "curve25519-sha256@libssh.org"
)

// shellEnv is sent by every client (SetEnv) and accepted by every server:
// bash reads ~/.bashrc when sshd runs it unless SHLVL says it is nested,
// and a slow .bashrc (pyenv init takes seconds) would otherwise swamp
// every figure. Both servers get the same treatment.
const shellEnv = "SHLVL"

// cipherDefault in -ciphers or -xfer-cipher runs the clients on their own
// choice: no -c, and every server offers its default cipher list (no
// Ciphers line), so offload's CipherSelection (measured by default) meets
// the OpenSSH client's order as users get it.
const cipherDefault = "default"

// defaultCiphers are the pipe benchmark's ciphers.
var defaultCiphers = []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
	"chacha20-poly1305@openssh.com", "aes128-ctr"}

// serverSpec is one server under test.
type serverSpec struct {
	Name     string
	Desc     string
	OpenSSH  bool
	Extra    []string          // offload-only config lines
	Pipe     func(string) bool // which ciphers the pipe tests run on it
	Files    bool              // sftp and scp
	Sessions bool              // ssh-true latency and handshakes
}

func allCiphers(string) bool { return true }
func gcmOnly(c string) bool  { return strings.Contains(c, "-gcm") }

// serverSpecs lists the servers of a run; the PKCS #11 one only with a token.
func serverSpecs(w *workspace, t *tools, pkcs11 bool) []serverSpec {
	specs := []serverSpec{
		{Name: srvOpenSSH, Desc: "OpenSSH sshd (system package)", OpenSSH: true, Pipe: allCiphers, Files: true, Sessions: true},
		{Name: srvOffload, Desc: "offload sshd, CryptoPolicy fastest (bulk on the cpu provider where it wins calibration)",
			Pipe: allCiphers, Files: true, Sessions: true},
		{Name: srvSoftware, Desc: "offload sshd, CryptoPolicy software-only (pure Go: generic AES, x/crypto ChaCha20-Poly1305)",
			Extra: []string{"CryptoPolicy software-only"}, Pipe: allCiphers, Files: true},
	}
	specs = append(specs, serverSpec{Name: srvInProc,
		Desc:  "offload sshd as `offload`, in one process (PrivilegeSeparation no): what the process model costs",
		Extra: []string{"PrivilegeSeparation no"}, Pipe: allCiphers, Files: true, Sessions: true})
	specs = append(specs, serverSpec{Name: srvClientSel,
		Desc:  "offload sshd with CipherSelection client: the client's cipher order, as before measured became the default",
		Extra: []string{"CipherSelection client"}, Pipe: allCiphers, Files: true, Sessions: true})
	specs = append(specs, serverSpec{Name: srvWindow,
		Desc:  "offload sshd as `offload`, with ChannelWindowSize 8388608 for every client instead of auto (which grants OpenSSH clients 2 MiB)",
		Extra: []string{"ChannelWindowSize " + strconv.Itoa(bigWindow)}, Pipe: allCiphers, Files: true})
	if pkcs11 {
		specs = append(specs, serverSpec{Name: srvPKCS11,
			Desc: "offload sshd, AES-GCM pinned to SoftHSM through PKCS #11 (ProviderMap aes128-gcm=pkcs11 aes256-gcm=pkcs11)",
			Extra: []string{
				"PKCS11Module " + t.SoftHSMModule,
				"PKCS11Token pkcs11:token=" + w.Token,
				"PKCS11PinSource " + w.PinFile,
				"ProviderMap aes128-gcm=pkcs11 aes256-gcm=pkcs11",
			}, Pipe: gcmOnly, Files: true})
	}
	return specs
}

// configText is the server's configuration file; OpenSSH and offload get
// the same listener, keys, algorithms and limits.
func configText(s serverSpec, w *workspace, addr string, port int, ciphers []string) string {
	lines := []string{
		"Port " + strconv.Itoa(port),
		"ListenAddress " + addr,
		"HostKey " + w.HostKey,
		"AuthorizedKeysFile " + w.AuthorizedKeys,
		"PasswordAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		"MACs " + etmMAC,
		// paramiko 2 knows curve25519 only by its old name; every other
		// client sends kexAlg alone.
		"KexAlgorithms " + kexAlg + "," + kexAlgLibSSH,
		"HostKeyAlgorithms " + hostKeyAlg,
		"MaxStartups 200:30:400",
		"MaxSessions 64",
		"Subsystem sftp internal-sftp",
		"AcceptEnv " + shellEnv,
		"LogLevel ERROR",
		"PidFile none",
	}
	if !slices.Contains(ciphers, cipherDefault) {
		lines = append(lines, "Ciphers "+strings.Join(ciphers, ","))
	}
	if s.OpenSSH {
		lines = append(lines, "UsePAM no", "StrictModes no", "UseDNS no", "PrintMotd no",
			"PrintLastLog no", "KbdInteractiveAuthentication no")
	} else {
		lines = append(lines, "CalibrationCache "+filepath.Join(w.Dir, "calibration"),
			// OpenSSH 9.2 has no per-source penalties; the handshake
			// runs, which close connections before authenticating, would
			// have 127.0.0.1 refused.
			"PerSourcePenalties no")
		lines = append(lines, s.Extra...)
	}
	return strings.Join(lines, "\n") + "\n"
}

// server is a running server process.
type server struct {
	spec  serverSpec
	port  int
	cmd   *exec.Cmd
	log   string
	meter cpuMeter
	// resident is how many children the server keeps while idle: 0 for
	// OpenSSH (a process per connection, gone with it), the pre-auth
	// workers for separated offload.
	resident int
	exited   chan struct{}
	argv     []string
	config   string
}

// serverArgv is the command line that runs spec with config file conf.
func serverArgv(s serverSpec, sshd, offload, conf string) []string {
	if s.OpenSSH {
		return []string{sshd, "-D", "-e", "-f", conf}
	}
	return []string{offload, "sshd", "-D", "-f", conf}
}

// startServer writes the config and starts the server in its own process
// group, then waits until it accepts connections.
func startServer(ctx context.Context, s serverSpec, w *workspace, t *tools, offload, addr string, ciphers []string) (*server, error) {
	port, err := freePort(addr)
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(w.Dir, s.Name+".conf")
	text := configText(s, w, addr, port, ciphers)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	sv := &server{spec: s, port: port, log: filepath.Join(w.Dir, s.Name+".log"), exited: make(chan struct{}), config: text}
	sv.argv = serverArgv(s, t.SSHD, offload, conf)
	logf, err := os.Create(sv.log)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer logf.Close()
	sv.cmd = exec.Command(sv.argv[0], sv.argv[1:]...)
	sv.cmd.Stdout, sv.cmd.Stderr = logf, logf
	sv.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if w.SoftHSMConf != "" {
		sv.cmd.Env = append(os.Environ(), "SOFTHSM2_CONF="+w.SoftHSMConf)
	}
	if err := sv.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", s.Name, err)
	}
	sv.meter = cpuMeter{procDir: "/proc", pid: sv.cmd.Process.Pid}
	go func() { sv.cmd.Wait(); close(sv.exited) }()
	if err := sv.waitReady(ctx, addr, 60*time.Second); err != nil {
		sv.stop()
		return nil, err
	}
	sv.resident = sv.meter.Children()
	return sv, nil
}

// settle waits until only the server's resident children are left (a
// separated offload's post-auth processes end after their linger).
func (s *server) settle(limit time.Duration) error {
	return s.meter.Settle(s.resident, limit)
}

// freePort asks the kernel for a port that is free right now.
func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls the port until the server answers with an SSH banner.
func (s *server) waitReady(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("bench: %s exited at start: %s", s.spec.Name, s.logTail(800))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, strconv.Itoa(s.port)), time.Second); err == nil {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 4)
			_, rerr := c.Read(buf)
			c.Close()
			if rerr == nil && string(buf) == "SSH-" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s did not accept SSH connections on port %d within %v: %s",
				s.spec.Name, s.port, limit, s.logTail(800))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logTail is the end of the server's log, for error messages.
func (s *server) logTail(n int) string {
	b, _ := os.ReadFile(s.log)
	t := strings.TrimSpace(string(b))
	if len(t) > n {
		t = "..." + t[len(t)-n:]
	}
	if t == "" {
		return "(no log output)"
	}
	return t
}

// stop ends the server, its process group and any descendant that left
// the group (OpenSSH's per-connection children call setsid): SIGTERM,
// then SIGKILL after a grace period.
func (s *server) stop() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	pid := s.cmd.Process.Pid
	signalTree(pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
	}
	signalTree(pid, syscall.SIGKILL)
	select {
	case <-s.exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("bench: %s (pid %d) did not exit", s.spec.Name, pid)
	}
}

// signalTree signals pid's descendants, its process group and pid.
func signalTree(pid int, sig syscall.Signal) {
	if t, err := proctree.Read("/proc"); err == nil {
		kids := t.Descendants(pid)
		slices.Reverse(kids)
		for _, k := range kids {
			syscall.Kill(k, sig)
		}
	}
	syscall.Kill(-pid, sig)
	syscall.Kill(pid, sig)
}

// stopAll stops every server and joins their errors.
func stopAll(servers []*server) error {
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.stop())
	}
	return errors.Join(errs...)
}
