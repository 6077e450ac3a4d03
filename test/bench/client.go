package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// client builds and runs OpenSSH client commands against one server.
type client struct {
	t    *tools
	w    *workspace
	addr string
	user string
}

// sshOptions are the -o options every client command gets: no user or
// system configuration, only the throwaway key, only our known_hosts, no
// prompts, no multiplexing, the same key exchange as the servers.
func (c *client) sshOptions() []string {
	opts := []string{
		"IdentitiesOnly=yes", "IdentityFile=" + c.w.ClientKey,
		"UserKnownHostsFile=" + c.w.KnownHosts, "GlobalKnownHostsFile=/dev/null",
		"StrictHostKeyChecking=yes", "UpdateHostKeys=no", "BatchMode=yes",
		"ControlMaster=no", "ControlPath=none", "ConnectTimeout=15", "LogLevel=ERROR",
		"KexAlgorithms=" + kexAlg, "HostKeyAlgorithms=" + hostKeyAlg,
		"MACs=" + etmMAC, "Compression=no", "User=" + c.user,
		"SetEnv=" + shellEnv + "=1",
	}
	out := []string{"-F", "/dev/null"}
	for _, o := range opts {
		out = append(out, "-o", o)
	}
	return out
}

// sshArgs is `ssh -p PORT [-c CIPHER] ... ADDR COMMAND`.
func (c *client) sshArgs(port int, cipher, command string) []string {
	a := append([]string{c.t.SSH}, c.sshOptions()...)
	a = append(a, "-p", strconv.Itoa(port), "-T")
	if cipher != "" && cipher != cipherDefault {
		a = append(a, "-c", cipher)
	}
	return append(a, c.addr, command)
}

// sftpArgs runs the batch file against the server.
func (c *client) sftpArgs(port int, cipher, batch string) []string {
	a := append([]string{c.t.SFTP}, c.sshOptions()...)
	a = append(a, "-q", "-P", strconv.Itoa(port), "-b", batch)
	if cipher != "" && cipher != cipherDefault {
		a = append(a, "-c", cipher)
	}
	return append(a, c.host())
}

// scpArgs copies src to dst; legacy selects the old scp protocol (-O).
func (c *client) scpArgs(port int, cipher string, legacy bool, src, dst string) []string {
	a := append([]string{c.t.SCP}, c.sshOptions()...)
	a = append(a, "-q", "-P", strconv.Itoa(port))
	if legacy {
		a = append(a, "-O")
	}
	if cipher != "" && cipher != cipherDefault {
		a = append(a, "-c", cipher)
	}
	return append(a, src, dst)
}

// host is the address as sftp and scp want it: IPv6 in brackets.
func (c *client) host() string {
	if strings.Contains(c.addr, ":") {
		return "[" + c.addr + "]"
	}
	return c.addr
}

// remote names a path on the server for scp.
func (c *client) remote(path string) string { return c.host() + ":" + path }

// cmdTimes are a client command's wall time and the CPU time of it and
// its waited-for children (scp's and sftp's ssh), from wait4's rusage.
type cmdTimes struct {
	Wall, CPU time.Duration
}

// runCmd runs argv with stdin and stdout, in its own process group that
// is killed whole when ctx ends, and times it.
func runCmd(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) (cmdTimes, error) {
	return runCmdCapture(ctx, argv, stdin, stdout, nil)
}

// runCmdCapture is runCmd that also keeps the first MiB of the command's
// standard error in capture, when not nil (ssh -v's debug output).
func runCmdCapture(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer, capture *bytes.Buffer) (cmdTimes, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4096}
	if capture != nil {
		cmd.Stderr = io.MultiWriter(cmd.Stderr, &limitedBuffer{buf: capture, max: 1 << 20})
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	t := cmdTimes{Wall: time.Since(start)}
	if ps := cmd.ProcessState; ps != nil {
		t.CPU = ps.UserTime() + ps.SystemTime()
	}
	if err != nil {
		if ctx.Err() != nil {
			return t, fmt.Errorf("bench: %s: %w after %v", shortArgv(argv), ctx.Err(), t.Wall.Round(time.Millisecond))
		}
		msg := stderr.String()
		if capture != nil {
			msg = withoutDebug(capture.String())
		}
		return t, fmt.Errorf("bench: %s: %v: %s", shortArgv(argv), err, strings.TrimSpace(msg))
	}
	return t, nil
}

// withoutDebug is the end of ssh -v's output without its debug lines:
// the error, when there is one.
func withoutDebug(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "debug") {
			keep = append(keep, l)
		}
	}
	out := strings.Join(keep, "\n")
	if len(out) > 600 {
		out = "..." + out[len(out)-600:]
	}
	return out
}

// shortArgv names a command in errors without the long option list.
func shortArgv(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	last := argv[len(argv)-1]
	return fmt.Sprintf("%s ... %s", argv[0], truncate(last, 60))
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// countWriter counts what it discards.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// checkSize fails unless path holds want bytes.
func checkSize(path string, want int64) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if st.Size() != want {
		return fmt.Errorf("bench: %s has %d bytes, want %d", path, st.Size(), want)
	}
	return nil
}
