// Package connection_test drives offload's connection layer through the
// whole server with real clients: the OpenSSH ssh, sftp and scp
// programs, and golang.org/x/crypto/ssh. Tests skip (or fail with
// OFFLOAD_REQUIRE_TOOLS=1) when the OpenSSH client is missing.
package connection_test

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

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
)

// fixture is a running server with an OpenSSH client key authorized.
type fixture struct {
	dir, key, user, port string
	signer               ssh.Signer
	logs                 *syncBuffer
}

// syncBuffer collects the server log.
type syncBuffer = sshtest.LogBuffer

// newFixture starts a server; conn, when not nil, is the connection
// layer's configuration.
func newFixture(t *testing.T, conn *connection.Config) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), logs: &syncBuffer{}}
	f.key, _ = sshtest.ClientKey(t, f.dir)
	f.authorize(t)
	if conn == nil {
		conn = &connection.Config{}
	}
	// SHLVL keeps bash from sourcing a slow ~/.bashrc (it does at level 1
	// under sshd); LC_* and OFFLOAD_OK are for the env tests.
	conn.AcceptEnv = append(conn.AcceptEnv, "SHLVL", "LC_*", "OFFLOAD_OK")
	f.start(t, conn)
	return f
}

func (f *fixture) authorize(t *testing.T) {
	t.Helper()
	pemBytes, err := os.ReadFile(f.key)
	if err != nil {
		t.Fatal(err)
	}
	if f.signer, err = ssh.ParsePrivateKey(pemBytes); err != nil {
		t.Fatal(err)
	}
	ak := filepath.Join(f.dir, "authorized_keys")
	if err := os.WriteFile(ak, ssh.MarshalAuthorizedKey(f.signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	f.user = u.Username
}

func (f *fixture) start(t *testing.T, conn *connection.Config) {
	t.Helper()
	ak := filepath.Join(f.dir, "authorized_keys")
	cfg := &sshd.Config{
		Auth:        &auth.Config{AuthorizedKeysFiles: []string{ak}, IgnoreFileModes: true},
		Conn:        conn,
		MaxStartups: 100,
		Logger:      slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	srv, err := sshd.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, f.port, _ = net.SplitHostPort(l.Addr().String())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
		if t.Failed() {
			t.Logf("server log:\n%s", f.logs.String())
		}
	})
}

// common are the client options every OpenSSH program gets.
func (f *fixture) common() []string {
	return []string{"-F", "/dev/null", "-i", f.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-o", "ConnectTimeout=10", "-o", "SendEnv=SHLVL"}
}

// clientEnv is the environment of client programs: SHLVL=1 is sent.
func clientEnv(extra ...string) []string {
	return append(append(os.Environ(), "SHLVL=1"), extra...)
}

// ssh runs the OpenSSH client with args (options, then the remote
// command) and returns stdout, stderr and the exit code.
func (f *fixture) ssh(t *testing.T, stdin []byte, env []string, args ...string) (string, string, int) {
	t.Helper()
	bin := testenv.LookPath(t, "ssh", "apt-get install openssh-client")
	ctx, cancel := testenv.Context(t)
	defer cancel()
	argv := append(f.common(), "-p", f.port, "-l", f.user)
	argv = append(argv, args[:len(args)-1]...)
	argv = append(argv, "127.0.0.1", args[len(args)-1])
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Env = clientEnv(env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errb, bytes.NewReader(stdin)
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

// tool runs sftp or scp with the common options and returns the output.
func (f *fixture) tool(t *testing.T, name string, stdin string, args ...string) (string, error) {
	t.Helper()
	bin := testenv.LookPath(t, name, "apt-get install openssh-client")
	ctx, cancel := testenv.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append(f.common(), "-P", f.port), args...)...)
	cmd.Env = clientEnv()
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// dialErr logs in with x/crypto/ssh; safe from any goroutine.
func (f *fixture) dialErr() (*ssh.Client, error) {
	return ssh.Dial("tcp", "127.0.0.1:"+f.port, &ssh.ClientConfig{
		User: f.user, Auth: []ssh.AuthMethod{ssh.PublicKeys(f.signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second,
	})
}

// dial logs in with x/crypto/ssh.
func (f *fixture) dial(t *testing.T) *ssh.Client {
	t.Helper()
	c, err := f.dialErr()
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
