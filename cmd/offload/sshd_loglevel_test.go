package main

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/offload/offload/internal/sshtest"
)

// TestMatchLogLevelReachesPostauth: LogLevel in a Match block applies to
// the connection's lines from its post-auth process too (the default
// process model), not only to authentication's: with the server at INFO,
// a connection on the Match LocalPort port logs its direct-tcpip channel
// (a DEBUG line of the connection protocol), one on the other port does
// not, before and after the matched one shared the user's process.
func TestMatchLogLevelReachesPostauth(t *testing.T) {
	cl := newOpenSSHClient(t)
	ports := freePorts(t, 2)
	cfg := writeConfig(t, fmt.Sprintf(`ListenAddress 127.0.0.1:%d
ListenAddress 127.0.0.1:%d
StrictModes no
AuthorizedKeysFile %s
LogLevel INFO
Match LocalPort %d
	LogLevel DEBUG
`, ports[0], ports[1], cl.authorizedKeys, ports[1]))
	logs := &sshtest.LogBuffer{}
	startDaemonLogging(t, cfg, logs, slog.LevelInfo)
	echo := echoServer(t)
	const line = "connection: direct-tcpip"
	forward := func(port int) {
		t.Helper()
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if out, stderr, err := cl.run(t, addr, "", strings.NewReader("ping\n"), []string{"-W", echo}); err != nil || out != "ping\n" {
			t.Fatalf("-W through %s: %q %q %v", addr, out, stderr, err)
		}
	}
	forward(ports[0])
	if n := strings.Count(logs.String(), line); n != 0 {
		t.Fatalf("LogLevel INFO connection logged %d DEBUG lines:\n%s", n, logs)
	}
	forward(ports[1])
	if n := strings.Count(logs.String(), line); n != 1 {
		t.Fatalf("LogLevel DEBUG (Match LocalPort) connection: %d %q lines, want 1:\n%s", n, line, logs)
	}
	forward(ports[0])
	if n := strings.Count(logs.String(), line); n != 1 {
		t.Fatalf("after the DEBUG connection, an INFO one logged DEBUG lines (%d):\n%s", n, logs)
	}
}

// startDaemonLogging starts the daemon with the logger shape of a real
// start (a level filter at level over a handler taking every level, the
// filter also the children's level) writing to w.
func startDaemonLogging(t *testing.T, cfgPath string, w *sshtest.LogBuffer, level slog.Level) {
	t.Helper()
	o, err := parseSshdFlags([]string{"-f", cfgPath, "-shutdown-timeout", "2s"}, w)
	if err != nil {
		t.Fatal(err)
	}
	o.level = new(slog.LevelVar)
	o.level.Set(level)
	log := slog.New(&levelHandler{inner: slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug - 4}), level: o.level})
	runTestDaemon(t, o, log)
}
