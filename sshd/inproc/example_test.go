package inproc_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"os/user"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/inproc"
	"github.com/offload/offload/sshd/login"
	"github.com/offload/offload/sshd/transport"
)

// One connection served in this process: the key exchange
// succeeds, the password is wrong, and the Env is told of the failed
// login (package sshd counts these for inetd mode's exit status).
func Example() {
	reg := provider.New(provider.Config{})
	if err := reg.Register(software.New()); err != nil {
		panic(err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	tr, err := transport.NewServer(&transport.Config{Registry: reg, HostKeys: []crypto.Signer{key}})
	if err != nil {
		panic(err)
	}
	a := &auth.Config{PasswordAuthentication: true,
		PasswordCallback: func(string, string) (bool, error) { return false, nil }}
	var failed atomic.Int64
	env := &inproc.Env{Transport: tr, Logins: &login.Config{Auth: a, Conn: &connection.Config{}},
		Log: slog.New(slog.DiscardHandler), MaxAuthRequests: auth.MaxRequests(a),
		LoginGraceTime: time.Minute, OnFailed: func() { failed.Add(1) }}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if nc, err := l.Accept(); err == nil {
			inproc.New(env, nc, 1).Serve(context.Background())
		}
	}()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	u, _ := user.Current()
	cfg := &ssh.ClientConfig{User: u.Username, Auth: []ssh.AuthMethod{ssh.Password("wrong")},
		HostKeyCallback: ssh.InsecureIgnoreHostKey()}
	_, _, _, err = ssh.NewClientConn(client, l.Addr().String(), cfg)
	client.Close()
	<-done
	fmt.Println("login refused:", err != nil)
	fmt.Println("failed logins:", failed.Load())
	// Output:
	// login refused: true
	// failed logins: 1
}
