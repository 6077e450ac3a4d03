package auth_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/offload/offload/internal/sshtest"
	"github.com/offload/offload/internal/testenv"
)

// daemon is a running `offload sshd` (the real program, privilege
// separation as configured: on by default).
type daemon struct {
	port   string
	pid    int
	stderr *sshtest.LogBuffer
}

// startOffloadDaemon runs offload sshd as root on 127.0.0.1 with the
// configuration lines given, before a host key, the port and PidFile
// defaults; flags are added to the command line (-E file, say) and env
// to its environment. Penalties are off unless lines set them: OpenSSH
// 9.2, which the tests compare with, has none.
func startOffloadDaemon(t *testing.T, f *fixture, flags, env []string, lines ...string) *daemon {
	t.Helper()
	testenv.Root(t)
	bin := testenv.OffloadBinary(t)
	hostKey := filepath.Join(f.dir, "ssh_host_ed25519_key")
	if _, err := os.Stat(hostKey); err != nil {
		f.run(f.gen, "-q", "-t", "ed25519", "-N", "", "-f", hostKey)
	}
	var d *daemon
	s := testenv.StartOnFreePort(t, func(port string) testenv.Launch {
		d = &daemon{port: port, stderr: &sshtest.LogBuffer{}}
		n := strconv.FormatInt(daemonSeq.Add(1), 10)
		pidFile := filepath.Join(f.dir, "offload."+n+".pid")
		path := filepath.Join(f.dir, "offload_config."+n)
		os.WriteFile(path, []byte(offloadConfig(lines, port, hostKey, pidFile)), 0o600)
		cmd := f.command(bin, append([]string{"sshd", "-D", "-f", path, "-shutdown-timeout", "2s"}, flags...)...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = d.stderr, d.stderr
		// the PidFile, a path of this start alone, is written once it listens
		return testenv.Launch{Cmd: cmd, Output: d.stderr, Listens: func() bool { return testenv.FileExists(pidFile) }}
	})
	d.pid = s.Cmd.Process.Pid
	return d
}

var daemonSeq atomic.Int64

// offloadConfig is lines, then the test's defaults, then a Match block of
// lines and what follows it (the first setting of a keyword wins).
func offloadConfig(lines []string, port, hostKey, pidFile string) string {
	var match []string
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Match ") }); i >= 0 {
		lines, match = lines[:i], lines[i:]
	}
	cfg := append(append([]string(nil), lines...), "Port "+port, "ListenAddress 127.0.0.1", "HostKey "+hostKey,
		"PidFile "+pidFile, "AuthorizedKeysFile .ssh/authorized_keys", "PerSourcePenalties no", "CalibrationCache none")
	return strings.Join(append(cfg, match...), "\n") + "\n"
}

// awaitLog returns the first match of re in what log holds, waiting for
// it until the test's startup deadline ("" then): a server's line
// reaches the buffer after the client has seen the outcome it records,
// through the daemon's stderr pipe or written after the reply.
func awaitLog(t *testing.T, log fmt.Stringer, re *regexp.Regexp) string {
	t.Helper()
	var m string
	testenv.WaitUntil(t, func() bool { m = re.FindString(log.String()); return m != "" })
	return m
}

// awaitLine reports whether s appears in log before the startup deadline.
func awaitLine(t *testing.T, log fmt.Stringer, s string) bool {
	t.Helper()
	return awaitLog(t, log, regexp.MustCompile(regexp.QuoteMeta(s))) != ""
}
