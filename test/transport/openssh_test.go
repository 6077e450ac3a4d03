// Package transport_test runs offload's SSH server against real clients:
// the OpenSSH client over every cipher × key exchange × host-key type it
// supports, with a throwaway client key.
package transport_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/transport"
)

var (
	keysOnce sync.Once
	hostKeys []crypto.Signer
)

func allHostKeys() []crypto.Signer {
	keysOnce.Do(func() {
		_, ed, _ := ed25519.GenerateKey(rand.Reader)
		p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
		rk, _ := rsa.GenerateKey(rand.Reader, 2048)
		hostKeys = []crypto.Signer{ed, p256, p384, p521, rk}
	})
	return hostKeys
}

// fixture is a running server and an OpenSSH client set up to log in.
type fixture struct {
	ssh, dir, key, user, addr, port string
	srv                             *sshd.Server
	logs                            *syncBuffer
}

// syncBuffer collects the server log.
type syncBuffer = sshtest.LogBuffer

func newFixture(t *testing.T, cfg *sshd.Config) *fixture {
	t.Helper()
	f := &fixture{ssh: testenv.LookPath(t, "ssh", "apt-get install openssh-client"), dir: t.TempDir(), logs: &syncBuffer{}}
	f.key, _ = sshtest.ClientKey(t, f.dir)
	pub, err := os.ReadFile(f.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	ak := filepath.Join(f.dir, "authorized_keys")
	if err := os.WriteFile(ak, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	f.user = u.Username
	var pkAlgs []string // a caller's PubkeyAcceptedAlgorithms
	if cfg.Auth != nil {
		pkAlgs = cfg.Auth.PublicKeyAlgorithms
	}
	cfg.Auth = &auth.Config{AuthorizedKeysFiles: []string{ak}, IgnoreFileModes: true, PublicKeyAlgorithms: pkAlgs}
	if cfg.Conn == nil {
		// SHLVL=1 from the client keeps bash from sourcing ~/.bashrc for a
		// remote command, which can take seconds on a developer machine.
		cfg.Conn = &connection.Config{AcceptEnv: []string{"SHLVL"}}
	}
	if cfg.HostKeys == nil {
		cfg.HostKeys = allHostKeys()
	}
	if cfg.KexAlgorithms == nil {
		cfg.KexAlgorithms = transport.SupportedKex()
	}
	cfg.Logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.srv, err = sshd.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = l.Addr().String()
	_, f.port, _ = net.SplitHostPort(f.addr)
	go f.srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.srv.Shutdown(ctx)
		if t.Failed() {
			t.Logf("server log:\n%s", f.logs.String())
		}
	})
	return f
}

// command returns an ssh command line for the fixture with extra -o
// options and a remote command.
func (f *fixture) command(ctx context.Context, opts []string, remote string) *exec.Cmd {
	// ssh takes the first value of an option: the caller's go first.
	var args []string
	for _, o := range opts {
		args = append(args, "-o", o)
	}
	args = append(args, "-F", "/dev/null", "-p", f.port, "-i", f.key,
		"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10")
	args = append(args, "-o", "SendEnv=SHLVL", "-l", f.user, "127.0.0.1", remote)
	cmd := exec.CommandContext(ctx, f.ssh, args...)
	cmd.Env = append(os.Environ(), "SHLVL=1")
	return cmd
}

// run executes remote with opts and returns stdout, stderr and the exit
// status.
func (f *fixture) run(t *testing.T, opts []string, remote string, stdin []byte) (string, string, int) {
	t.Helper()
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := f.command(ctx, opts, remote)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = bytes.NewReader(stdin)
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	}
	t.Fatalf("ssh: %v", err)
	return "", "", -1
}

// sftp runs an sftp batch with opts; internal-sftp is served in process,
// so this measures the transport rather than the user's shell start-up
// (a login shell that runs pyenv init takes seconds).
func (f *fixture) sftp(t *testing.T, opts []string, batch string) string {
	t.Helper()
	out, err := f.sftpErr(t, opts, batch)
	if err != nil {
		t.Fatalf("sftp %v: %v\n%s", opts, err, out)
	}
	return out
}

func (f *fixture) sftpErr(t *testing.T, opts []string, batch string) (string, error) {
	t.Helper()
	sftp := testenv.LookPath(t, "sftp", "apt-get install openssh-client")
	// ssh takes the first value of an option: the caller's go first.
	var args []string
	for _, o := range opts {
		args = append(args, "-o", o)
	}
	args = append(args, "-b", "-", "-P", f.port, "-i", f.key, "-F", "/dev/null",
		"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR")
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, sftp, append(args, f.user+"@127.0.0.1")...)
	cmd.Stdin = strings.NewReader(batch)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// clientSupports lists what `ssh -Q what` reports.
func clientSupports(t *testing.T, sshPath, what string) []string {
	out, err := exec.Command(sshPath, "-Q", what).Output()
	if err != nil {
		t.Fatalf("ssh -Q %s: %v", what, err)
	}
	return strings.Fields(string(out))
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestOpenSSHExec logs in with a key and runs a command: stdout, stderr
// and the exit status come back.
func TestOpenSSHExec(t *testing.T) {
	f := newFixture(t, &sshd.Config{})
	out, errOut, code := f.run(t, nil, "echo hello; echo oops >&2; exit 3", nil)
	if out != "hello\n" || errOut != "oops\n" || code != 3 {
		t.Fatalf("stdout %q stderr %q status %d", out, errOut, code)
	}
}

// TestOpenSSHDefaultsGetPostQuantumKex: an OpenSSH 8.5-9.9 client on its
// own defaults (sntrup761x25519-sha512@openssh.com first) gets a
// post-quantum key exchange from the server's default offer, not the
// classical curve25519 behind it.
func TestOpenSSHDefaultsGetPostQuantumKex(t *testing.T) {
	f := newFixture(t, &sshd.Config{KexAlgorithms: transport.DefaultKex()})
	out, errOut, code := f.run(t, nil, "echo ok", nil)
	if out != "ok\n" || code != 0 {
		t.Fatalf("stdout %q stderr %q status %d", out, errOut, code)
	}
	logs := f.logs.String()
	var kex string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "key exchange done") {
			_, rest, _ := strings.Cut(line, "kex=")
			kex, _, _ = strings.Cut(rest, " ")
			break
		}
	}
	if !strings.HasPrefix(kex, "sntrup761x25519-sha512") && !strings.HasPrefix(kex, "mlkem768x25519") {
		t.Fatalf("OpenSSH client on defaults negotiated %q, not a post-quantum kex", kex)
	}
	t.Logf("negotiated %s", kex)
}

// TestOpenSSHMatrix logs in (and runs an sftp command) over every cipher (and MAC) × key
// exchange × host-key algorithm both sides support. Without OFFLOAD_LONG
// the host-key types are covered with one cipher and key exchange.
func TestOpenSSHMatrix(t *testing.T) {
	f := newFixture(t, &sshd.Config{MACs: transport.SupportedMACs()})
	// The legacy ciphers and MACs (CBC, SHA-1, MD5, UMAC) and aes192-ctr
	// have their own test, TestOpenSSHLegacyCiphersAndMACs.
	ciphers := intersect(transport.DefaultCiphers(), clientSupports(t, f.ssh, "cipher"))
	ciphers = slices.DeleteFunc(ciphers, func(c string) bool { return c == "aes192-ctr" })
	kexes := intersect(transport.SupportedKex(), clientSupports(t, f.ssh, "kex"))
	hostKeys := intersect(transport.SupportedHostKeyAlgorithms(), clientSupports(t, f.ssh, "key-sig"))
	hostKeys = slices.DeleteFunc(hostKeys, func(a string) bool {
		// TestOpenSSHHostCertificate; ssh-rsa is off by default (TestOpenSSHLegacyHostKeys)
		return strings.Contains(a, "-cert-v01") || a == "ssh-rsa"
	})
	macs := intersect(transport.SupportedMACs(), clientSupports(t, f.ssh, "mac"))
	macs = slices.DeleteFunc(macs, func(m string) bool { return !strings.HasPrefix(m, "hmac-sha2-") })
	long := os.Getenv("OFFLOAD_LONG") == "1"
	for _, kex := range kexes {
		for _, hk := range hostKeys {
			if !long && hk != hostKeys[0] {
				continue
			}
			for _, c := range ciphers {
				for _, mac := range macs {
					if strings.Contains(c, "gcm") || strings.Contains(c, "chacha") {
						if mac != macs[0] {
							continue
						}
					}
					if !long && strings.HasPrefix(kex, "diffie-hellman") && (c != ciphers[0] || mac != macs[0]) {
						continue // finite-field DH is slow; one cell each without OFFLOAD_LONG
					}
					name := fmt.Sprintf("%s/%s/%s/%s", kex, hk, c, mac)
					t.Run(name, func(t *testing.T) {
						opts := []string{"KexAlgorithms=" + kex, "HostKeyAlgorithms=" + hk, "Ciphers=" + c, "MACs=" + mac}
						f.checkSFTP(t, opts)
					})
				}
			}
		}
	}
	for _, hk := range hostKeys[1:] {
		if long {
			break
		}
		t.Run("hostkey/"+hk, func(t *testing.T) {
			f.checkSFTP(t, []string{"HostKeyAlgorithms=" + hk})
		})
	}
}

func (f *fixture) checkSFTP(t *testing.T, opts []string) {
	t.Helper()
	wd, _ := os.Getwd()
	if out := f.sftp(t, opts, "cd "+wd+"\npwd\n"); !strings.Contains(out, "Remote working directory: "+wd) {
		t.Fatalf("sftp output %q", out)
	}
}

var (
	clientOnce sync.Once
	clientSig  ssh.Signer
)

// clientKey is an in-process client key and its authorized_keys line.
func clientKey(tb testing.TB) (ssh.Signer, []byte) {
	clientOnce.Do(func() {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		clientSig, _ = ssh.NewSignerFromSigner(k)
	})
	return clientSig, ssh.MarshalAuthorizedKey(clientSig.PublicKey())
}

func authFor(authorizedKeys string) *auth.Config {
	return &auth.Config{AuthorizedKeysFiles: []string{authorizedKeys}, IgnoreFileModes: true}
}

func currentUser(tb testing.TB) string {
	u, err := user.Current()
	if err != nil {
		tb.Fatal(err)
	}
	return u.Username
}

// TestOpenSSHRekeyMidTransfer moves 8 MiB each way with rekeys forced
// every MiB by the server and every few MiB by the client, and checks
// SHA-256 sums. (The OpenSSH client rounds the next packet up to bytes,
// not blocks, when it checks its limit: with 64 KiB channel packets a
// client RekeyLimit of 1M would rekey after every packet.)
func TestOpenSSHRekeyMidTransfer(t *testing.T) {
	f := newFixture(t, &sshd.Config{RekeyLimit: 1 << 20})
	data := make([]byte, 8<<20)
	rand.Read(data)
	sum := fmt.Sprintf("%x", sha256.Sum256(data))
	file := filepath.Join(f.dir, "payload")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com", "aes256-ctr"} {
		t.Run(c, func(t *testing.T) {
			opts := []string{"Ciphers=" + c, "RekeyLimit=4M"}
			if c != "aes128-gcm@openssh.com" {
				// The OpenSSH client's sntrup761 (its default here) costs it
				// ~150 ms a rekey; one cipher keeps it, the others save time.
				opts = append(opts, "KexAlgorithms=curve25519-sha256")
			}
			out, errOut, code := f.run(t, opts, "sha256sum", data)
			if code != 0 || !strings.HasPrefix(out, sum) {
				t.Fatalf("upload: status %d stdout %q stderr %q", code, out, errOut)
			}
			out, errOut, code = f.run(t, opts, "cat "+file, nil)
			if code != 0 || fmt.Sprintf("%x", sha256.Sum256([]byte(out))) != sum {
				t.Fatalf("download: status %d, %d bytes, stderr %q", code, len(out), errOut)
			}
		})
	}
}

// TestOpenSSHStrictKexAndExtInfo: the OpenSSH client reports strict kex
// ordering and receives EXT_INFO with server-sig-algs.
func TestOpenSSHStrictKexAndExtInfo(t *testing.T) {
	f := newFixture(t, &sshd.Config{})
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := f.command(ctx, nil, "true")
	cmd.Args = append([]string{cmd.Args[0], "-vvv"}, cmd.Args[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ssh: %v\n%s", err, out)
	}
	for _, want := range []string{"will use strict KEX ordering", "SSH2_MSG_EXT_INFO received",
		"server-sig-algs=<ssh-ed25519,", "rsa-sha2-256>"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("client log lacks %q", want)
		}
	}
}

// TestOpenSSHUpdateHostKeys: a client that knows only the Ed25519 host
// key learns the others (hostkeys-00@openssh.com), asks for proof of
// them (hostkeys-prove-00@openssh.com), checks it and writes them to its
// known_hosts, as it does with OpenSSH's sshd.
func TestOpenSSHUpdateHostKeys(t *testing.T) {
	t.Run("in-process", func(t *testing.T) { testUpdateHostKeys(t, &sshd.Config{}) })
	// Separated, the proofs are signed by the monitor over the session id
	// it recorded.
	t.Run("separated", func(t *testing.T) { testUpdateHostKeys(t, &sshd.Config{Separation: &sshd.Separation{Workers: 1}}) })
}

func testUpdateHostKeys(t *testing.T, cfg *sshd.Config) {
	f := newFixture(t, cfg)
	ed, err := ssh.NewSignerFromSigner(allHostKeys()[0])
	if err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(f.dir, "known_hosts")
	line := knownhosts.Line([]string{"[127.0.0.1]:" + f.port}, ed.PublicKey())
	if err := os.WriteFile(kh, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := []string{"UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes", "UpdateHostKeys=yes",
		"CheckHostIP=no", "LogLevel=DEBUG1"}
	// The client drops the proofs' answer if the session has ended first
	// (it does not wait for it): let the session outlast them, as any
	// real one does.
	out, errOut, code := f.run(t, opts, "sleep 1; echo ok", nil)
	if out != "ok\n" || code != 0 {
		t.Fatalf("stdout %q stderr %q status %d", out, errOut, code)
	}
	b, err := os.ReadFile(kh)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range allHostKeys() {
		pub, _ := ssh.NewPublicKey(s.Public())
		if !strings.Contains(string(b), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))) {
			t.Errorf("known_hosts lacks the %s host key after UpdateHostKeys:\n%s\nssh said:\n%s", pub.Type(), b, errOut)
		}
	}
}

// TestOpenSSHHostCertificate: a host certificate made by ssh-keygen -h is
// offered with its -cert-v01 algorithm, and a client that trusts only the
// CA (@cert-authority) accepts the server, as with OpenSSH's
// HostCertificate.
func TestOpenSSHHostCertificate(t *testing.T) {
	keygen := testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca")
	run := func(args ...string) {
		if out, err := exec.Command(keygen, args...).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen %v: %v\n%s", args, err, out)
		}
	}
	run("-q", "-t", "ed25519", "-N", "", "-f", ca)
	for i, k := range allHostKeys() {
		pub, _ := ssh.NewPublicKey(k.Public())
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("host%d.pub", i)), ssh.MarshalAuthorizedKey(pub), 0o600)
	}
	var certs []*ssh.Certificate
	for i := range allHostKeys() {
		run("-q", "-s", ca, "-h", "-I", "offload test", "-n", "127.0.0.1", filepath.Join(dir, fmt.Sprintf("host%d.pub", i)))
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("host%d-cert.pub", i)))
		if err != nil {
			t.Fatal(err)
		}
		pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, pub.(*ssh.Certificate))
	}
	f := newFixture(t, &sshd.Config{HostCertificates: certs})
	caPub, err := os.ReadFile(ca + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(f.dir, "known_hosts")
	os.WriteFile(kh, []byte("@cert-authority [127.0.0.1]:"+f.port+" "+string(caPub)), 0o600)
	for _, alg := range []string{"ssh-ed25519-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com", "rsa-sha2-512-cert-v01@openssh.com"} {
		t.Run(alg, func(t *testing.T) {
			opts := []string{"UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes", "HostKeyAlgorithms=" + alg, "LogLevel=DEBUG1"}
			out, errOut, code := f.run(t, opts, "echo ok", nil)
			if out != "ok\n" || code != 0 || !strings.Contains(errOut, "Server host certificate") {
				t.Fatalf("stdout %q status %d; ssh said:\n%s", out, code, errOut)
			}
		})
	}
}

// TestOpenSSHHostBoundAuth: EXT_INFO announces
// publickey-hostbound@openssh.com and the OpenSSH client then logs in
// with publickey-hostbound-v00@openssh.com (its signature bound to the
// host key), in process and with the monitor deciding, as it does against
// OpenSSH's sshd.
func TestOpenSSHHostBoundAuth(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *sshd.Config
	}{
		{"in-process", &sshd.Config{}},
		{"separated", &sshd.Config{Separation: &sshd.Separation{Workers: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg)
			ctx, cancel := testenv.Context(t)
			defer cancel()
			cmd := f.command(ctx, nil, "true")
			cmd.Args = append([]string{cmd.Args[0], "-vvv"}, cmd.Args[1:]...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("ssh: %v\n%s", err, out)
			}
			for _, want := range []string{"publickey-hostbound@openssh.com=<0>",
				"using publickey-hostbound-v00@openssh.com", "Authenticated to"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("client log lacks %q", want)
				}
			}
		})
	}
}
