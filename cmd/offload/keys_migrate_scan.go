package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// scanCompare starts a temporary offload sshd on 127.0.0.1 serving only
// the token's copies of keys, runs ssh-keyscan against it, and checks
// each key type shows the fingerprint of its OpenSSH file: the proof
// clients' known_hosts entries stay valid.
func scanCompare(ctx context.Context, keys []migratedKey, module, pinSource string, stderr io.Writer) error {
	keyscan, err := exec.LookPath("ssh-keyscan")
	if err != nil {
		return errors.New("-scan needs ssh-keyscan (apt-get install openssh-client)")
	}
	dir, err := os.MkdirTemp("", "offload-migrate-scan")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var conf strings.Builder
	fmt.Fprintf(&conf, "ListenAddress 127.0.0.1:0\nPidFile %s\nPKCS11Module %s\nPKCS11PinSource %s\nPKCS11StateDir %s\nCalibrationCache none\nAuthorizedKeysFile none\nPasswordAuthentication no\nPerSourcePenaltyExemptList 127.0.0.1\n",
		filepath.Join(dir, "pid"), module, pinSource, dir)
	for _, k := range keys {
		fmt.Fprintf(&conf, "HostKey %s\n", k.uri)
	}
	cfg := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(conf.String()), 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := &listenLog{port: make(chan int, 1)}
	srv := exec.CommandContext(sctx, self, "sshd", "-D", "-e", "-f", cfg)
	srv.Stdout, srv.Stderr = log, log
	srv.Cancel = func() error { return srv.Process.Signal(os.Interrupt) }
	srv.WaitDelay = 10 * time.Second
	if err := srv.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	stop := func() { cancel(); <-done }
	port, err := waitListening(ctx, log.port, done)
	if err != nil {
		stop()
		return fmt.Errorf("the temporary offload sshd did not start: %w\n%s", err, log.String())
	}
	var types []string
	for _, k := range keys {
		types = append(types, k.typ)
	}
	out, err := exec.CommandContext(ctx, keyscan, "-p", strconv.Itoa(port), "-t", strings.Join(types, ","), "127.0.0.1").Output()
	stop()
	if err != nil {
		return fmt.Errorf("ssh-keyscan: %w\n%s", err, log.String())
	}
	return compareScan(keys, out, port, stderr)
}

// compareScan checks ssh-keyscan's output has every key, unchanged.
func compareScan(keys []migratedKey, out []byte, port int, stderr io.Writer) error {
	seen := map[string]ssh.PublicKey{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(rest))
		if err != nil {
			return fmt.Errorf("ssh-keyscan printed %q: %w", line, err)
		}
		seen[k.Type()] = k
	}
	for _, k := range keys {
		got, ok := seen[k.pub.Type()]
		if !ok {
			return fmt.Errorf("ssh-keyscan of 127.0.0.1:%d shows no %s key", port, k.pub.Type())
		}
		if !bytes.Equal(got.Marshal(), k.pub.Marshal()) {
			return fmt.Errorf("ssh-keyscan shows %s %s, but %s is %s", k.pub.Type(), ssh.FingerprintSHA256(got), k.file, ssh.FingerprintSHA256(k.pub))
		}
		fmt.Fprintf(stderr, "ssh-keyscan: %s %s, as %s\n", k.pub.Type(), ssh.FingerprintSHA256(got), k.file)
	}
	return nil
}

// listenLog keeps a server's log and sends the port of its first
// "listening" line: the server listens on port 0, so no other process can
// have taken its port between a choice and the bind.
type listenLog struct {
	mu   sync.Mutex
	b    bytes.Buffer
	sent bool
	port chan int
}

var listeningLine = regexp.MustCompile(`msg=listening addr=127\.0\.0\.1:(\d+)\n`)

func (l *listenLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	if l.sent {
		return len(p), nil
	}
	if m := listeningLine.FindSubmatch(l.b.Bytes()); m != nil {
		n, _ := strconv.Atoi(string(m[1]))
		l.port <- n
		l.sent = true
	}
	return len(p), nil
}

func (l *listenLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitListening waits until the server says which port it listens on, or
// ends.
func waitListening(ctx context.Context, port chan int, done chan error) (int, error) {
	deadline := time.After(2 * time.Minute)
	select {
	case p := <-port:
		return p, nil
	case err := <-done:
		done <- err // for the caller's wait
		return 0, fmt.Errorf("it exited: %v", err)
	case <-deadline:
		return 0, errors.New("not listening after 2 minutes")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
