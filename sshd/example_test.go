package sshd_test

import (
	"context"
	"fmt"
	"net"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd"
)

// A server with the zero Config (software and CPU providers, an ephemeral
// host key, default algorithms) on a loopback listener; a client connects
// and sees the host key and the server's version.
func ExampleServer() {
	srv, err := sshd.NewServer(&sshd.Config{})
	if err != nil {
		panic(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())

	cfg := &ssh.ClientConfig{
		User: "nobody",
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			fmt.Println("host key:", key.Type())
			return nil
		},
		BannerCallback: func(string) error { return nil },
	}
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	_, _, _, err = ssh.NewClientConn(nc, l.Addr().String(), cfg)
	fmt.Println("login without a key fails:", err != nil)
	// Output:
	// host key: ssh-ed25519
	// login without a key fails: true
}

// A separated server: the same Config with Separation set. The program's
// main must call sshd.RunChild before anything else (this package's
// TestMain does), since the pre-auth workers and post-auth processes are
// the program started again.
func ExampleSeparation() {
	srv, err := sshd.NewServer(&sshd.Config{Separation: &sshd.Separation{Workers: 1}})
	if err != nil {
		panic(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())

	cfg := &ssh.ClientConfig{
		User: "nobody",
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			fmt.Println("host key:", key.Type())
			return nil
		},
	}
	_, err = ssh.Dial("tcp", l.Addr().String(), cfg)
	fmt.Println("key exchange in a pre-auth worker, login refused:", err != nil)
	// Output:
	// host key: ssh-ed25519
	// key exchange in a pre-auth worker, login refused: true
}
