// Command loginload logs in to an SSH server many times from several
// goroutines at once (test/bench/internal/login: x/crypto/ssh,
// curve25519-sha256, Ed25519 keys, public-key authentication, then hang
// up) and prints the rate. With -times it logs in one at a time and
// prints each login's wall time in milliseconds, one a line; with
// -defaults the client uses x/crypto's default algorithms instead of the
// benchmark's fixed ones (test/bench/login-latency.sh).
// test/bench/login-ab.sh uses it to compare builds of offload sshd; the
// harness (go run ./test/bench -only handshakes) compares servers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/test/bench/internal/login"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:2399", "server address")
	n := flag.Int("n", 2000, "logins in all")
	clients := flag.Int("c", 16, "logins at once")
	key := flag.String("key", "", "client private key file")
	user := flag.String("user", "", "user name (default: $USER)")
	times := flag.Bool("times", false, "log in one at a time and print each login's milliseconds")
	defaults := flag.Bool("defaults", false, "use x/crypto's default algorithms")
	flag.Parse()
	cfg, err := clientConfig(*key, *user, *defaults)
	if err == nil && *times {
		err = timeEach(*addr, cfg, *n)
	} else if err == nil {
		err = run(*addr, cfg, *n, *clients)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loginload:", err)
		os.Exit(1)
	}
}

// clientConfig is the login's configuration: the benchmark's, or with
// x/crypto's default algorithms.
func clientConfig(keyFile, user string, defaults bool) (*ssh.ClientConfig, error) {
	pem, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return nil, err
	}
	if user == "" {
		user = os.Getenv("USER")
	}
	cfg := login.Config(user, signer, ssh.InsecureIgnoreHostKey()) // a throwaway server's key
	if defaults {
		cfg.Config, cfg.HostKeyAlgorithms = ssh.Config{}, nil
	}
	return cfg, nil
}

// timeEach logs in n times, one after another, printing each login's
// wall time.
func timeEach(addr string, cfg *ssh.ClientConfig, n int) error {
	for range n {
		start := time.Now()
		if err := login.Once(context.Background(), addr, cfg); err != nil {
			return err
		}
		fmt.Printf("%.3f\n", float64(time.Since(start).Microseconds())/1000)
	}
	return nil
}

func run(addr string, cfg *ssh.ClientConfig, n, clients int) error {
	var left, failed atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := login.Once(context.Background(), addr, cfg); err != nil {
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
