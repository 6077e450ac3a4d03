package transport_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/connection"
)

// BenchmarkPipeUpload is `ssh host 'cat >/dev/null' < data` through the
// whole server (transport, auth, connection layer, a child process) with
// the in-process x/crypto/ssh client, per cipher. SHLVL=1 is sent so that
// bash skips ~/.bashrc and start-up stays out of the figure.
func BenchmarkPipeUpload(b *testing.B) {
	for _, c := range []string{"aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com", "aes128-ctr"} {
		b.Run(c, func(b *testing.B) { benchPipe(b, c, "cat >/dev/null") })
	}
}

func benchPipe(b *testing.B, cipher, command string) {
	f := newBenchFixture(b)
	cl := f.xclient(b, cipher)
	defer cl.Close()
	chunk := bytes.Repeat([]byte{0x5a}, 1<<20)
	size := 64 << 20
	b.SetBytes(int64(size))
	for b.Loop() {
		s, err := cl.NewSession()
		if err != nil {
			b.Fatal(err)
		}
		s.Setenv("SHLVL", "1")
		w, _ := s.StdinPipe()
		if err := s.Start(command); err != nil {
			b.Fatal(err)
		}
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		w.Close()
		if err := s.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

type benchFixture struct{ addr, user string }

func newBenchFixture(b *testing.B) *benchFixture {
	signer, pubLine := clientKey(b)
	dir := b.TempDir()
	ak := dir + "/authorized_keys"
	if err := os.WriteFile(ak, pubLine, 0o600); err != nil {
		b.Fatal(err)
	}
	_ = signer
	cfg := &sshd.Config{HostKeys: allHostKeys()[:1], Conn: &connection.Config{AcceptEnv: []string{"SHLVL"}}}
	cfg.Auth = authFor(ak)
	srv, err := sshd.NewServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(l)
	b.Cleanup(func() { l.Close() })
	return &benchFixture{addr: l.Addr().String(), user: currentUser(b)}
}

func (f *benchFixture) xclient(b *testing.B, cipher string) *ssh.Client {
	signer, _ := clientKey(b)
	cfg := &ssh.ClientConfig{User: f.user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second}
	cfg.Ciphers = []string{cipher}
	cl, err := ssh.Dial("tcp", f.addr, cfg)
	if err != nil {
		b.Fatal(fmt.Errorf("dial: %w", err))
	}
	return cl
}
