package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
)

// clientFor makes a client key, authorizes it for the account
// loginAccount gives (its authorized_keys file in dir unless that is a
// throwaway user's) and returns the client config that logs in to it and
// the file's path.
func clientFor(t *testing.T, dir string) (*ssh.ClientConfig, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := ssh.NewSignerFromKey(priv)
	sshPub, _ := ssh.NewPublicKey(pub)
	name, ak := loginAccount(t, dir, ssh.MarshalAuthorizedKey(sshPub))
	return &ssh.ClientConfig{User: name, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second}, ak
}

// loginAccount returns the account the tests' clients log in to and an
// authorized_keys file for it holding keys. As root that is a throwaway
// user (shell /bin/sh, an empty home holding the file, owned by it):
// logging in as root would run root's shell startup files, which belong
// to the machine, not the test (one whose pyenv init left a stale lock
// made every login wait 60 s). Otherwise it is the current user, with the
// file in dir.
func loginAccount(t *testing.T, dir string, keys []byte) (name, ak string) {
	t.Helper()
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			t.Skip("no current user:", err)
		}
		ak = filepath.Join(dir, "authorized_keys")
		if err := os.WriteFile(ak, keys, 0o600); err != nil {
			t.Fatal(err)
		}
		return u.Username, ak
	}
	u := testenv.NewUser(t)
	testenv.Run(t, "usermod", "-p", "*", u.Username) // no password, not locked ("!")
	ak = filepath.Join(u.HomeDir, "authorized_keys")
	if err := os.WriteFile(ak, keys, 0o600); err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(ak, uid, gid); err != nil {
		t.Fatal(err)
	}
	return u.Username, ak
}

func runEcho(t *testing.T, c *ssh.Client) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// stdout only: the account's shell startup files may write to stderr
	// (this machine's root runs pyenv's init); stderr goes in the message.
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	if err := s.Run("echo offload-ok"); err != nil || strings.TrimSpace(out.String()) != "offload-ok" {
		t.Fatalf("exec: stdout %q, stderr %q, %v", out.String(), errb.String(), err)
	}
}

// TestSshdSession logs in with a key from AuthorizedKeysFile and runs a
// command: the configuration reaches auth and the connection layer.
func TestSshdSession(t *testing.T) {
	dir := t.TempDir()
	cc, ak := clientFor(t, dir)
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nStrictModes no\nAuthorizedKeysFile "+ak+"\n")
	d, _, _ := startTestDaemon(t, cfg)
	c, err := ssh.Dial("tcp", d.listeners[0].Addr().String(), cc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	runEcho(t, c)
}

// TestSshdInetd serves one connection on stdin (a socket, as inetd gives).
func TestSshdInetd(t *testing.T) {
	dir := t.TempDir()
	cc, ak := clientFor(t, dir)
	cfg := writeConfig(t, "StrictModes no\nAuthorizedKeysFile "+ak+"\n")
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	server := os.NewFile(uintptr(fds[0]), "server")
	clientFile := os.NewFile(uintptr(fds[1]), "client")
	client, err := net.FileConn(clientFile) // a dup: close the original so Close means EOF
	clientFile.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	oldStdin := os.Stdin
	os.Stdin = server
	defer func() { os.Stdin = oldStdin }()
	o, err := parseSshdFlags([]string{"-i", "-f", cfg}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serveInetd(context.Background(), o, slog.New(slog.DiscardHandler)) }()

	sc, chans, reqs, err := ssh.NewClientConn(client, "inetd", cc)
	if err != nil {
		t.Fatal(err)
	}
	c := ssh.NewClient(sc, chans, reqs)
	runEcho(t, c)
	c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serveInetd: %v", err)
		}
	case <-testenv.Timeout(t):
		t.Fatal("inetd mode did not end with its connection")
	}
}
