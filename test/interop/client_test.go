package interop_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// client is one SSH client of the matrix.
type client struct {
	name string
	// tools are the executables it needs, with where they come from.
	tools []tool
	// setup finds what the client needs beyond tools (a Python module, an
	// npm package) and returns its version; it calls missing when absent.
	version func(t *testing.T) string
	ops     []op
	// rekey: the client can be told to re-key by itself.
	rekey bool
	// noCommon are the client's messages for a failed negotiation, for
	// when it hangs up before the server finds none in common.
	noCommon []string
}

type tool struct{ name, pkg string }

// op is one thing a client does in a cell.
type op struct {
	name string
	// data: it moves the payload (it runs in the rekey cells).
	data bool
	// defaultsOnly: it runs in the defaults cell only.
	defaultsOnly bool
	run          func(ctx context.Context, a *attempt) error
}

// attempt is what an op needs: the cell, its server and directories.
type attempt struct {
	e      *env
	c      cell
	s      *server
	remote string // the cell's directory on the server side
	local  string // the cell's directory on the client side
	tools  map[string]string
	prog   progress // what the running op's processes do (watchdog_test.go)
}

// key is the client's private key (OpenSSH format) for this cell.
func (a *attempt) key() string {
	if a.c.rsaUser {
		return a.e.rsaKey
	}
	return a.e.key
}

// ppk is the client's private key in PuTTY's format.
func (a *attempt) ppk() string {
	if a.c.rsaUser {
		return a.e.rsaKeyPPK
	}
	return a.e.keyPPK
}

// remotePath names a file in the cell's remote directory.
func (a *attempt) remotePath(name string) string { return filepath.Join(a.remote, name) }

// checkUpload compares the file the server side wrote with the payload.
func (a *attempt) checkUpload(path string) error {
	sum, err := fileSum(path)
	if err != nil {
		return fmt.Errorf("uploaded file: %w", err)
	}
	if sum != a.e.sum {
		st, _ := os.Stat(path)
		return fmt.Errorf("uploaded file %s differs: sha256 %s, want %s (size %d)", filepath.Base(path), sum, a.e.sum, st.Size())
	}
	return nil
}

// checkRoundTrip compares the uploaded and the downloaded copy with the
// payload.
func (a *attempt) checkRoundTrip(remote, local string) error {
	if err := a.checkUpload(remote); err != nil {
		return err
	}
	sum, err := fileSum(local)
	if err != nil {
		return fmt.Errorf("downloaded file: %w", err)
	}
	if sum != a.e.sum {
		return fmt.Errorf("downloaded file differs: sha256 %s, want %s", sum, a.e.sum)
	}
	return nil
}

// cmd runs a tool and returns its standard output; an error carries the
// tail of its output.
func (a *attempt) cmd(ctx context.Context, env []string, stdin string, name string, args ...string) (string, error) {
	c := exec.CommandContext(ctx, a.tools[name], args...)
	c.Env = append(os.Environ(), env...)
	c.Dir = a.local
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			return "", err
		}
		defer f.Close()
		c.Stdin = f
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	// Stopping an op stops its client's children too (rsync's and git's
	// ssh), which would hold its output open.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	err := c.Start()
	if err == nil {
		a.prog.started(c.Process.Pid)
		err = c.Wait()
		a.prog.ended(c.Process.Pid)
	}
	if err != nil {
		err = withCause(ctx, err)
		return out.String(), fmt.Errorf("%s: %v: %s", name, err, tail(errb.String()+out.String(), 1500))
	}
	return out.String(), nil
}

// wantOutput runs a tool and checks its standard output.
func (a *attempt) wantOutput(ctx context.Context, want string, env []string, name string, args ...string) error {
	out, err := a.cmd(ctx, env, "", name, args...)
	if err != nil {
		return err
	}
	if out != want {
		return fmt.Errorf("%s printed %q, want %q", name, tail(out, 200), want)
	}
	return nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// execCommand is the remote command of the exec ops and what it prints.
const (
	execCommand = "echo interop-$((6*7))"
	execWant    = "interop-42\n"
)

// pqOp checks, in the defaults cell, that a client whose default offer
// has the post-quantum key exchange kex (found by offer, "" for none)
// got a post-quantum key exchange from the earlier ops' connections.
func pqOp(offer func() string) op {
	return op{name: "post-quantum kex", defaultsOnly: true, run: func(_ context.Context, a *attempt) error {
		kex := offer()
		if kex == "" {
			return errors.New("the client offers no post-quantum key exchange")
		}
		n := negotiated(a.s.log.since(0))
		if n == "" {
			return errors.New("no key exchange in the server's log")
		}
		if got, _, _ := strings.Cut(n, ","); !strings.Contains(got, "mlkem") && !strings.Contains(got, "sntrup") {
			return fmt.Errorf("negotiated %s, though the client offers %s", got, kex)
		}
		return nil
	}}
}

// opensshPQ is the post-quantum key exchange in the OpenSSH client's
// default offer.
func opensshPQ() string {
	out, err := exec.Command("ssh", "-G", "-F", "/dev/null", "127.0.0.1").Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, _ := strings.Cut(line, " "); k == "kexalgorithms" {
			for _, n := range strings.Split(v, ",") {
				if strings.Contains(n, "sntrup") || strings.Contains(n, "mlkem") {
					return n
				}
			}
		}
	}
	return ""
}

// lookTools finds the client's tools, or skips/fails t.
func lookTools(t *testing.T, cl *client) map[string]string {
	m := map[string]string{}
	for _, tl := range cl.tools {
		m[tl.name] = testenv.LookPath(t, tl.name, "apt-get install "+tl.pkg)
	}
	return m
}

// missing skips t, or fails it under OFFLOAD_REQUIRE_TOOLS=1.
func missing(t *testing.T, what string) {
	t.Helper()
	testenv.Missing(t, what, "scripts/test.sh installs it")
}

// firstLine is the first line of a command's output, for versions.
func firstLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil && len(out) == 0 {
		return "?"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}
