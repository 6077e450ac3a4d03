// Package login is the benchmarks' in-process SSH client: the settings
// every server is measured with, and one login.
//
// # Use
//
// test/bench times logins and holds idle connections with it against
// OpenSSH's sshd and offload's; test/bench/loginload drives it to compare
// builds of offload (test/bench/login-ab.sh).
package login

import (
	"context"
	"fmt"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// The algorithms of a benchmark login; the servers are configured with
// the same ones, so the only difference is the implementation.
const (
	KexAlgorithm     = "curve25519-sha256"
	HostKeyAlgorithm = ssh.KeyAlgoED25519
	Cipher           = "aes128-gcm@openssh.com"
)

// Config is the client configuration of a benchmark login as user with
// signer's key, checking the host key with hostKey.
func Config(user string, signer ssh.Signer, hostKey ssh.HostKeyCallback) *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:              user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback:   hostKey,
		HostKeyAlgorithms: []string{HostKeyAlgorithm},
		Timeout:           30 * time.Second,
		Config:            ssh.Config{KeyExchanges: []string{KexAlgorithm}, Ciphers: []string{Cipher}},
	}
}

// Once connects to addr, authenticates and hangs up.
func Once(ctx context.Context, addr string, cfg *ssh.ClientConfig) error {
	c, err := Dial(ctx, addr, cfg)
	if err != nil {
		return err
	}
	return c.Close()
}

// Dial connects to addr and authenticates; the caller closes the client.
// The server's channel requests are refused and its global requests
// discarded.
func Dial(ctx context.Context, addr string, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	var dl net.Dialer
	conn, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	conn.SetDeadline(time.Now().Add(cfg.Timeout))
	if d, ok := ctx.Deadline(); ok && d.Before(time.Now().Add(cfg.Timeout)) {
		conn.SetDeadline(d)
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("login: %w", err)
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}
