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
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// clientFor makes a client key, writes it to an authorized_keys file in
// dir and returns the client config that logs in as the current user.
func clientFor(t *testing.T, dir string) (*ssh.ClientConfig, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := ssh.NewSignerFromKey(priv)
	sshPub, _ := ssh.NewPublicKey(pub)
	ak := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(ak, ssh.MarshalAuthorizedKey(sshPub), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := user.Current()
	if err != nil {
		t.Skip("no current user:", err)
	}
	return &ssh.ClientConfig{User: u.Username, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second}, ak
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
	case <-time.After(60 * time.Second):
		t.Fatal("inetd mode did not end with its connection")
	}
}
