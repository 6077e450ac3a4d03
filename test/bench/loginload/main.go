// Command loginload logs in to an SSH server many times from several
// goroutines at once (x/crypto/ssh client, curve25519-sha256, Ed25519
// keys, public-key authentication, then hang up) and prints the rate.
// test/bench/login-ab.sh uses it to compare builds of offload sshd; the
// harness (go run ./test/bench -only handshakes) compares servers.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:2399", "server address")
	n := flag.Int("n", 2000, "logins in all")
	clients := flag.Int("c", 16, "logins at once")
	key := flag.String("key", "", "client private key file")
	user := flag.String("user", "", "user name (default: $USER)")
	flag.Parse()
	if err := run(*addr, *key, *user, *n, *clients); err != nil {
		fmt.Fprintln(os.Stderr, "loginload:", err)
		os.Exit(1)
	}
}

func run(addr, keyFile, user string, n, clients int) error {
	pem, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return err
	}
	if user == "" {
		user = os.Getenv("USER")
	}
	cfg := &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), HostKeyAlgorithms: []string{ssh.KeyAlgoED25519}, Timeout: 30 * time.Second,
		Config: ssh.Config{KeyExchanges: []string{"curve25519-sha256"}, Ciphers: []string{"aes128-gcm@openssh.com"}}}
	var left, failed atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := login(addr, cfg); err != nil {
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	fmt.Printf("%d logins in %.2fs: %.1f/s, %d failed\n", n, d.Seconds(), float64(n)/d.Seconds(), failed.Load())
	if failed.Load() > 0 {
		return fmt.Errorf("%d logins failed, first: %w", failed.Load(), firstErr)
	}
	return nil
}

func login(addr string, cfg *ssh.ClientConfig) error {
	conn, err := net.DialTimeout("tcp", addr, cfg.Timeout)
	if err != nil {
		return err
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		return err
	}
	go ssh.DiscardRequests(reqs)
	go func() {
		for ch := range chans {
			ch.Reject(ssh.Prohibited, "no")
		}
	}()
	return c.Close()
}
