package auth_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
	port := freePort(t)
	// lines first (the first setting of a keyword wins), but a Match
	// block and what follows it last
	var match []string
	for i, l := range lines {
		if strings.HasPrefix(l, "Match ") {
			lines, match = lines[:i], lines[i:]
			break
		}
	}
	cfg := append(append([]string(nil), lines...), "Port "+port, "ListenAddress 127.0.0.1", "HostKey "+hostKey,
		"AuthorizedKeysFile .ssh/authorized_keys", "PerSourcePenalties no", "CalibrationCache none")
	cfg = append(cfg, match...)
	path := filepath.Join(f.dir, "offload_config."+port)
	os.WriteFile(path, []byte(strings.Join(cfg, "\n")+"\n"), 0o600)
	d := &daemon{port: port, stderr: &sshtest.LogBuffer{}}
	cmd := f.command(bin, append([]string{"sshd", "-D", "-f", path, "-shutdown-timeout", "2s"}, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = d.stderr, d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.pid = cmd.Process.Pid
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	waitPort(t, port, d.stderr)
	return d
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
