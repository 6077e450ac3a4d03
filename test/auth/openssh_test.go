// Package auth_test logs in to offload's SSH server with the OpenSSH
// client: key types, user certificates made by ssh-keygen (trusted CA
// file and cert-authority lines), authorized_keys options, the banner and
// MaxAuthTries.
package auth_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
)

// fixture is a temp dir for keys and a way to start servers.
type fixture struct {
	t         *testing.T
	ssh, gen  string
	dir, user string
	wrap      []string // a command the servers run under (unshare, say)
}

// command is name with args, under f.wrap when set.
func (f *fixture) command(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string(nil), f.wrap...), name), args...)
	return exec.Command(argv[0], argv[1:]...)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, dir: t.TempDir(), user: u.Username,
		ssh: testenv.LookPath(t, "ssh", "apt-get install openssh-client"),
		gen: testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")}
}

// keygen makes a key pair named name of type typ and returns its path.
func (f *fixture) keygen(name, typ string, args ...string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	f.run(f.gen, append([]string{"-q", "-t", typ, "-N", "", "-C", name, "-f", p}, args...)...)
	return p
}

// certify signs key.pub with ca; the certificate is key-cert.pub.
func (f *fixture) certify(ca, key string, args ...string) {
	f.t.Helper()
	f.run(f.gen, append(append([]string{"-q", "-s", ca, "-I", "test-" + filepath.Base(key)}, args...), key+".pub")...)
}

func (f *fixture) run(name string, args ...string) {
	f.t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		f.t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

func (f *fixture) read(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// write writes authorized_keys-style text and returns its path.
func (f *fixture) write(name, text string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// server is a running offload server with an auth config.
type server struct {
	port string
	logs *syncBuffer
}

// syncBuffer collects the server log.
type syncBuffer = sshtest.LogBuffer

// serve starts a server with a (the files are in a temp dir, so mode
// checks are off).
func (f *fixture) serve(a *auth.Config) *server {
	f.t.Helper()
	s := &server{logs: &syncBuffer{}}
	a.IgnoreFileModes = true
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a.Logger = log
	srv, err := sshd.NewServer(&sshd.Config{Auth: a, Logger: log,
		Conn: &connection.Config{AcceptEnv: []string{"SHLVL"}}})
	if err != nil {
		f.t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	_, s.port, _ = net.SplitHostPort(l.Addr().String())
	go srv.Serve(l)
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if f.t.Failed() {
			f.t.Logf("server log:\n%s", s.logs)
		}
	})
	return s
}

// login runs `ssh ... remote` with identity key and extra -o options; it
// returns stdout, stderr and the exit status.
func (f *fixture) login(s *server, key, remote string, opts ...string) (string, string, int) {
	f.t.Helper()
	var args []string
	for _, o := range opts {
		args = append(args, "-o", o)
	}
	args = append(args, "-F", "/dev/null", "-p", s.port, "-i", key,
		"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10",
		"-o", "SendEnv=SHLVL", "-l", f.user, "127.0.0.1", remote)
	ctx, cancel := testenv.Context(f.t)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.ssh, args...)
	cmd.Env = append(os.Environ(), "SHLVL=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	}
	f.t.Fatalf("ssh: %v", err)
	return "", "", -1
}

// wantLogin expects remote "echo ok" (or a forced command) to print want.
func (f *fixture) wantLogin(s *server, key, want string, opts ...string) {
	f.t.Helper()
	out, errs, code := f.login(s, key, "echo ok", opts...)
	if code != 0 || strings.TrimSpace(out) != want {
		f.t.Fatalf("ssh -i %s %v: exit %d, stdout %q, stderr %q", filepath.Base(key), opts, code, out, errs)
	}
}

// wantDenied expects the login to fail with stderr containing msg.
func (f *fixture) wantDenied(s *server, key, msg string, opts ...string) {
	f.t.Helper()
	out, errs, code := f.login(s, key, "echo ok", opts...)
	if code != 255 || !strings.Contains(errs, msg) {
		f.t.Fatalf("ssh -i %s %v: exit %d, stdout %q, stderr %q; want 255 and %q", filepath.Base(key), opts, code, out, errs, msg)
	}
}

func TestOpenSSHKeyTypes(t *testing.T) {
	f := newFixture(t)
	ed := f.keygen("id_ed25519", "ed25519")
	ec := f.keygen("id_ecdsa", "ecdsa", "-b", "384")
	rsa := f.keygen("id_rsa", "rsa", "-b", "2048")
	ak := f.write("authorized_keys", f.read("id_ed25519.pub")+f.read("id_ecdsa.pub")+f.read("id_rsa.pub"))
	s := f.serve(&auth.Config{AuthorizedKeysFiles: []string{ak}})
	f.wantLogin(s, ed, "ok")
	f.wantLogin(s, ec, "ok")
	f.wantLogin(s, rsa, "ok", "PubkeyAcceptedAlgorithms=rsa-sha2-256")
	f.wantLogin(s, rsa, "ok", "PubkeyAcceptedAlgorithms=rsa-sha2-512")
	f.wantDenied(s, rsa, "Permission denied (publickey)", "PubkeyAcceptedAlgorithms=ssh-rsa")
	other := f.keygen("id_other", "ed25519")
	f.wantDenied(s, other, "Permission denied (publickey)")
}

func TestOpenSSHOptions(t *testing.T) {
	f := newFixture(t)
	key := f.keygen("id", "ed25519")
	pub := f.read("id.pub")
	for _, tc := range []struct {
		opts, want string
	}{
		{`command="echo forced"`, "forced"},
		{`from="127.0.0.0/8",restrict`, "ok"},
		{`from="10.0.0.1"`, ""},
		{`expiry-time="20200101"`, ""},
		{`expiry-time="29990101"`, "ok"},
		{`permitlisten="8080"`, "ok"},
		{`tunnel="1"`, ""}, // not implemented: the line is ignored, failing closed
	} {
		ak := f.write("authorized_keys", tc.opts+" "+pub)
		s := f.serve(&auth.Config{AuthorizedKeysFiles: []string{ak}})
		if tc.want == "" {
			f.wantDenied(s, key, "Permission denied (publickey)")
		} else {
			f.wantLogin(s, key, tc.want)
		}
	}
}

func TestOpenSSHCertificates(t *testing.T) {
	f := newFixture(t)
	ca := f.keygen("ca", "ed25519")
	rsaCA := f.keygen("rsa_ca", "rsa", "-b", "2048")
	trusted := f.write("trusted", f.read("ca.pub")+f.read("rsa_ca.pub"))
	s := f.serve(&auth.Config{AuthorizedKeysFiles: []string{"none"}, TrustedUserCAKeys: trusted})

	good := f.keygen("good", "ed25519")
	f.certify(ca, good, "-n", f.user, "-V", "-5m:+1h")
	f.wantLogin(s, good, "ok")
	plain := filepath.Join(f.dir, "plain") // the same key without its certificate
	f.write("plain", f.read("good"))
	f.write("plain.pub", f.read("good.pub"))
	f.wantDenied(s, plain, "Permission denied (publickey)")

	byRSA := f.keygen("by_rsa", "ecdsa")
	f.certify(rsaCA, byRSA, "-n", f.user)
	f.wantLogin(s, byRSA, "ok")

	forced := f.keygen("forced", "ed25519")
	f.certify(ca, forced, "-n", f.user, "-O", "force-command=echo forced")
	f.wantLogin(s, forced, "forced")

	for name, args := range map[string][]string{
		"other_principal": {"-n", "someone-else"},
		"expired":         {"-n", f.user, "-V", "20200101:20200102"},
		"source_address":  {"-n", f.user, "-O", "source-address=10.0.0.0/8"},
	} {
		k := f.keygen(name, "ed25519")
		f.certify(ca, k, args...)
		f.wantDenied(s, k, "Permission denied (publickey)")
	}
	untrusted := f.keygen("untrusted_ca", "ed25519")
	k := f.keygen("by_untrusted", "ed25519")
	f.certify(untrusted, k, "-n", f.user)
	f.wantDenied(s, k, "Permission denied (publickey)")
}

func TestOpenSSHCertAuthorityLine(t *testing.T) {
	f := newFixture(t)
	ca := f.keygen("ca", "ed25519")
	ak := f.write("authorized_keys", `cert-authority,principals="ops,dev" `+f.read("ca.pub"))
	s := f.serve(&auth.Config{AuthorizedKeysFiles: []string{ak}})
	ops := f.keygen("ops", "ed25519")
	f.certify(ca, ops, "-n", "ops")
	f.wantLogin(s, ops, "ok")
	mine := f.keygen("mine", "ed25519")
	f.certify(ca, mine, "-n", f.user) // principals= overrides the user name
	f.wantDenied(s, mine, "Permission denied (publickey)")
}

func TestOpenSSHBannerAndMaxAuthTries(t *testing.T) {
	f := newFixture(t)
	ak := f.write("authorized_keys", f.read(filepath.Base(f.keygen("id", "ed25519"))+".pub"))
	s := f.serve(&auth.Config{AuthorizedKeysFiles: []string{ak}, Banner: "offload test banner\n", MaxAuthTries: 2})
	var opts []string
	for _, n := range []string{"a", "b", "c"} {
		opts = append(opts, "IdentityFile="+f.keygen("wrong_"+n, "ed25519"))
	}
	_, errs, code := f.login(s, filepath.Join(f.dir, "wrong_a"), "echo ok", append(opts, "LogLevel=INFO")...)
	if code != 255 || !strings.Contains(errs, "offload test banner") || !strings.Contains(errs, "Too many authentication failures") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}
