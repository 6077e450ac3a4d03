package restart

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/offload/offload/internal/testenv"
)

// TestRestartKeepsSFTPAndForwarding: an SFTP session and a session with a
// local forwarding go on across a restart (a file put before and one
// after, a forwarded connection opened before and one after), and
// SIGTERM to the session keeper then ends the sessions it kept, and it.
func TestRestartKeepsSFTPAndForwarding(t *testing.T) {
	sftpServer := testenv.FirstFile(t, "sftp-server", "Debian package openssh-sftp-server", "/usr/lib/openssh/sftp-server")
	testenv.LookPath(t, "sftp", "Debian package openssh-client")
	s := newServer(t, "", "Subsystem sftp "+sftpServer, "AllowTcpForwarding yes")
	a := newAccount(t)
	echo := echoServer(t)
	d1 := s.start()

	local := t.TempDir()
	files := map[string][]byte{}
	for _, name := range []string{"before", "after"} {
		b := make([]byte, 256<<10)
		rand.Read(b)
		files[name] = b
		os.WriteFile(filepath.Join(local, name), b, 0o644)
	}
	home := homeOf(t, a)
	ft := s.sftp(a)
	fmt.Fprintf(ft.stdin, "put %s before\n", filepath.Join(local, "before"))
	waitFor(t, "the first upload", func() bool { return sameFile(filepath.Join(home, "before"), files["before"]) })

	fwdPort := testenv.FreePort(t)
	fw := s.session(a, "", "-N", "-o", "LogLevel=ERROR", "-o", "ExitOnForwardFailure=yes",
		"-L", "127.0.0.1:"+fwdPort+":"+echo)
	c1 := dialEcho(t, "127.0.0.1:"+fwdPort)

	keeper := d1.stop()
	if keeper == 0 {
		t.Fatal("the stopped daemon started no session keeper")
	}
	s.start()

	// The forwarded connection from before still carries data, and the
	// forwarding opens new ones.
	if got := echoLine(t, c1, "again"); got != "again" {
		t.Fatalf("forwarded connection after the restart: %q", got)
	}
	c2 := dialEcho(t, "127.0.0.1:"+fwdPort)
	c1.Close()
	c2.Close()
	// The SFTP session uploads and lists after the restart.
	fmt.Fprintf(ft.stdin, "put %s after\nls -1\nbye\n", filepath.Join(local, "after"))
	if code := ft.wait(); code != 0 {
		out, errs := ft.output()
		t.Fatalf("sftp after the restart: exit %d\n%s\n%s", code, out, errs)
	}
	if !sameFile(filepath.Join(home, "after"), files["after"]) {
		t.Fatal("the upload after the restart differs")
	}

	// SIGTERM to the keeper ends the sessions it keeps, and then it.
	syscall.Kill(keeper, syscall.SIGTERM)
	fw.wait()
	waitFor(t, "the session keeper to exit after SIGTERM", func() bool { return !alive(keeper) })
}

// sftp starts an sftp client that reads its commands from the test.
func (s *server) sftp(a *account) *session {
	args := []string{"-b", "-", "-P", s.port, "-i", a.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", a.name + "@127.0.0.1"}
	return s.command("sftp", args...)
}

func homeOf(t *testing.T, a *account) string {
	t.Helper()
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, ":"); len(f) >= 6 && f[0] == a.name {
			return f[5]
		}
	}
	t.Fatalf("no home for %s", a.name)
	return ""
}

func sameFile(path string, want []byte) bool {
	b, err := os.ReadFile(path)
	return err == nil && sha256.Sum256(b) == sha256.Sum256(want)
}

// echoServer answers each line with itself; it returns its address.
func echoServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return l.Addr().String()
}

// dialEcho connects through the forwarding, retrying until the client
// listens and the echo answers.
func dialEcho(t *testing.T, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	re := regexp.MustCompile(`^hello$`)
	waitFor(t, "a forwarded connection to the echo server", func() bool {
		var err error
		if c, err = net.Dial("tcp", addr); err != nil {
			return false
		}
		if got := echoLineErr(c, "hello"); !re.MatchString(got) {
			c.Close()
			return false
		}
		return true
	})
	return c
}

func echoLine(t *testing.T, c net.Conn, line string) string {
	t.Helper()
	return echoLineErr(c, line)
}

// echoLineErr sends a line and reads the answer ("" on an error); the
// deadline only keeps a broken test from hanging.
func echoLineErr(c net.Conn, line string) string {
	c.SetDeadline(time.Now().Add(waitLimit))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return ""
	}
	got, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(got, "\n")
}
