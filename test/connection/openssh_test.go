package connection_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

func TestOpenSSHExec(t *testing.T) {
	f := newFixture(t, nil)
	out, errOut, code := f.ssh(t, nil, nil, "echo out; echo err >&2; exit 3")
	if out != "out\n" || !strings.Contains(errOut, "err\n") || code != 3 {
		t.Errorf("stdout %q stderr %q code %d", out, errOut, code)
	}
}

func TestOpenSSHStdin(t *testing.T) {
	f := newFixture(t, nil)
	in := make([]byte, 4<<20)
	rand.Read(in)
	out, errOut, code := f.ssh(t, in, nil, "sha256sum")
	want := fmt.Sprintf("%x", sha256.Sum256(in))
	if !strings.HasPrefix(out, want) || code != 0 {
		t.Errorf("remote sha256 %q (stderr %q, code %d), want %s", out, errOut, code, want)
	}
}

func TestOpenSSHSignal(t *testing.T) {
	f := newFixture(t, nil)
	_, errOut, code := f.ssh(t, nil, nil, "kill -TERM $$")
	// OpenSSH's client exits 255 and reports the signal for exit-signal.
	if code != 255 {
		t.Errorf("exit code %d, stderr %q", code, errOut)
	}
}

func TestOpenSSHEnv(t *testing.T) {
	f := newFixture(t, nil)
	out, _, _ := f.ssh(t, nil, []string{"LC_OFFLOAD=yes", "OFFLOAD_OK=1", "OFFLOAD_NO=1"},
		"-o", "SendEnv=LC_OFFLOAD OFFLOAD_OK OFFLOAD_NO", `echo "$LC_OFFLOAD/$OFFLOAD_OK/${OFFLOAD_NO:-unset}"`)
	if out != "yes/1/unset\n" {
		t.Errorf("env: %q", out)
	}
}

func TestOpenSSHPTY(t *testing.T) {
	f := newFixture(t, nil)
	out, errOut, code := f.ssh(t, nil, nil, "-tt", `tty; echo "TERM=$TERM"; exit 7`)
	if !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "TERM=") || code != 7 {
		t.Errorf("pty exec: %q %q %d", out, errOut, code)
	}
	// An interactive shell on a pty, fed from stdin.
	out, errOut, code = f.ssh(t, []byte("echo shell-$((6*7))\nexit 5\n"), nil, "-tt", "-o", "RequestTTY=force", "")
	if !strings.Contains(out, "shell-42") || code != 5 {
		t.Errorf("pty shell: %q %q %d", out, errOut, code)
	}
}

func TestOpenSSHSFTPBatch(t *testing.T) {
	f := newFixture(t, nil)
	dir := t.TempDir()
	local := filepath.Join(dir, "local")
	data := make([]byte, 5<<20+3)
	rand.Read(data)
	os.WriteFile(local, data, 0o644)
	remote := filepath.Join(dir, "remote")
	batch := strings.Join([]string{
		"mkdir " + remote,
		"put " + local + " " + remote + "/a",
		"rename " + remote + "/a " + remote + "/b",
		"chmod 600 " + remote + "/b",
		"ls -l " + remote,
		"get " + remote + "/b " + dir + "/back",
		"rm " + remote + "/b",
		"rmdir " + remote,
	}, "\n") + "\n"
	out, err := f.tool(t, "sftp", batch, "-b", "-", f.user+"@127.0.0.1")
	if err != nil {
		t.Fatalf("sftp: %v\n%s", err, out)
	}
	if !strings.Contains(out, "-rw-------") {
		t.Errorf("ls after chmod: %s", out)
	}
	back, _ := os.ReadFile(dir + "/back")
	if !bytes.Equal(back, data) {
		t.Errorf("sftp get returned %d bytes, want %d", len(back), len(data))
	}
	if _, err := os.Stat(remote); !os.IsNotExist(err) {
		t.Errorf("remote dir still there: %v", err)
	}
}

func TestOpenSSHSCP(t *testing.T) {
	f := newFixture(t, nil)
	testenv.LookPath(t, "scp", "apt-get install openssh-client")
	for _, mode := range []string{"-s", "-O"} { // SFTP protocol, legacy scp -t/-f
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			data := make([]byte, 2<<20+1)
			rand.Read(data)
			os.WriteFile(dir+"/src", data, 0o640)
			target := f.user + "@127.0.0.1:" + dir
			if out, err := f.tool(t, "scp", "", mode, dir+"/src", target+"/up"); err != nil {
				t.Fatalf("scp upload: %v\n%s", err, out)
			}
			if out, err := f.tool(t, "scp", "", mode, target+"/up", dir+"/down"); err != nil {
				t.Fatalf("scp download: %v\n%s", err, out)
			}
			for _, name := range []string{"up", "down"} {
				if got, _ := os.ReadFile(dir + "/" + name); !bytes.Equal(got, data) {
					t.Errorf("%s: %d bytes differ", name, len(got))
				}
			}
		})
	}
}

// echoServer accepts connections on loopback and echoes them.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func TestOpenSSHForwardW(t *testing.T) {
	f := newFixture(t, nil)
	target := echoServer(t)
	in := bytes.Repeat([]byte("forward me\n"), 1000)
	out, errOut, code := f.ssh(t, in, nil, "-W", target, "")
	if out != string(in) || code != 0 {
		t.Errorf("ssh -W: %d bytes back (want %d), stderr %q, code %d", len(out), len(in), errOut, code)
	}
}

func TestOpenSSHForwardL(t *testing.T) {
	f := newFixture(t, nil)
	target := echoServer(t)
	lport := testenv.FreePort(t)
	bin := testenv.LookPath(t, "ssh", "apt-get install openssh-client")
	args := append(f.common(), "-p", f.port, "-l", f.user, "-N", "-o", "ExitOnForwardFailure=yes",
		"-L", "127.0.0.1:"+lport+":"+target, "127.0.0.1")
	cmd := exec.Command(bin, args...)
	cmd.Env = clientEnv()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var c net.Conn
	var err error
	if !testenv.WaitUntil(t, func() bool { c, err = net.Dial("tcp", "127.0.0.1:"+lport); return err == nil }) {
		t.Fatalf("forwarded port never opened: %v", err)
	}
	defer c.Close()
	msg := []byte("through the tunnel")
	c.Write(msg)
	got := make([]byte, len(msg))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Errorf("echo through -L: %q %v", got, err)
	}
}
