package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
)

// hostKeyOf dials addr and returns the host key the server presents. The
// login itself fails: the test client has no authorized key.
func hostKeyOf(t *testing.T, addr string) ssh.PublicKey {
	t.Helper()
	var got ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User: "nobody",
		Auth: []ssh.AuthMethod{ssh.Password("x")},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			got = key
			return nil
		},
		Timeout: 10 * time.Second,
	}
	c, err := ssh.Dial("tcp", addr, cfg)
	if err == nil {
		c.Close()
	}
	if got == nil {
		t.Fatalf("no host key from %s: %v", addr, err)
	}
	return got
}

func startTestDaemon(t *testing.T, cfgPath string) (*daemon, context.CancelFunc, chan struct{}) {
	t.Helper()
	o, err := parseSshdFlags([]string{"-f", cfgPath, "-shutdown-timeout", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = stderrLogger(os.Stderr, slog.LevelDebug)
	}
	return runTestDaemon(t, o, log)
}

// runTestDaemon starts the daemon o describes and runs its loop until
// the test ends.
func runTestDaemon(t *testing.T, o *sshdOptions, log *slog.Logger) (*daemon, context.CancelFunc, chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d, err := startDaemon(ctx, o, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer d.removePid()
		d.loop(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return d, cancel, done
}

func TestSshdDaemonReloadAndStop(t *testing.T) {
	dir := t.TempDir()
	pid := filepath.Join(dir, "offload.pid")
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nMetricsAddress 127.0.0.1:0\nPidFile "+pid+"\n")
	d, cancel, done := startTestDaemon(t, cfg)
	addr := d.listeners[0].Addr().String()

	b, err := os.ReadFile(pid)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("PidFile: %q %v", b, err)
	}
	first := hostKeyOf(t, addr)

	// A bad configuration is refused and the old one keeps serving.
	text, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, append(text, "MaxAuthTries lots\n"...), 0o644)
	d.reload(context.Background())
	if d.stats.reloadErrors.Load() != 1 {
		t.Fatal("bad reload not counted")
	}
	if k := hostKeyOf(t, addr); string(k.Marshal()) != string(first.Marshal()) {
		t.Fatal("host key changed after a refused reload")
	}

	// A good one with a new host key serves new connections with it.
	newKey := writeHostKey(t, t.TempDir())
	os.WriteFile(cfg, []byte(strings.Replace(string(text), "HostKey ", "HostKey "+newKey+"\n#", 1)), 0o644)
	d.reload(context.Background())
	if d.stats.reloads.Load() != 1 {
		t.Fatal("reload not applied")
	}
	if k := hostKeyOf(t, addr); string(k.Marshal()) == string(first.Marshal()) {
		t.Fatal("host key unchanged after reload")
	}

	// Metrics are served.
	resp, err := http.Get("http://" + d.metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "offload_sshd_sent_bytes_total 0\n") {
		t.Error("no bytes counted")
	}
	for _, want := range []string{"offload_sshd_connections_accepted_total 3", "offload_sshd_reloads_total 1",
		"offload_sshd_reload_failures_total 1", `offload_provider_operations_total{algorithm=`,
		"offload_sshd_received_bytes_total ", "offload_sshd_sent_bytes_total "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}

	// A new MetricsAddress moves the metrics listener.
	oldMetrics := d.metricsAddr
	text2, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(text2), "MetricsAddress 127.0.0.1:0", "MetricsAddress localhost:0", 1)), 0o644)
	d.reload(context.Background())
	if d.metricsAddr == oldMetrics || d.metricsAddr == "" {
		t.Errorf("metrics address %q after moving from %q", d.metricsAddr, oldMetrics)
	}
	if resp, err := http.Get("http://" + d.metricsAddr + "/metrics"); err != nil {
		t.Errorf("moved metrics listener: %v", err)
	} else {
		resp.Body.Close()
	}
	// The old listener closes asynchronously; give it a moment.
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + oldMetrics + "/metrics")
		if err != nil {
			break
		}
		resp.Body.Close()
		if i == 50 {
			t.Error("old metrics listener still serves")
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Stopping closes the listener and removes the PidFile.
	cancel()
	<-done
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("still accepting after shutdown")
	}
	if _, err := os.Stat(pid); !os.IsNotExist(err) {
		t.Errorf("PidFile left behind: %v", err)
	}
}

// TestSshdDaemonGracefulShutdown: in the in-process mode, SIGTERM gives
// connections the shutdown timeout, then cuts them (a separated server
// hands its sessions to a keeper instead: TestSshdStopEndsPreauth).
func TestSshdDaemonGracefulShutdown(t *testing.T) {
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\nPrivilegeSeparation no\n")
	d, cancel, done := startTestDaemon(t, cfg)
	addr := d.listeners[0].Addr().String()
	// An open TCP connection that has not finished its handshake.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !testenv.WaitUntil(t, func() bool { return d.stats.active.Load() == 1 }) {
		t.Fatalf("%d connections active, want 1", d.stats.active.Load())
	}
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-testenv.Timeout(t):
		t.Fatal("shutdown hangs")
	}
	// The connection was given the shutdown timeout (2s), then cut.
	if el := time.Since(start); el < 1500*time.Millisecond {
		t.Errorf("shutdown took %v; sessions were not given time to finish", el)
	}
	if d.stats.active.Load() != 0 {
		t.Errorf("%d connections still active", d.stats.active.Load())
	}
}

// TestSshdDaemonReloadListeners: SIGHUP opens and closes listeners as
// ListenAddress changes, and refuses an address it cannot listen on.
func TestSshdDaemonReloadListeners(t *testing.T) {
	cfg := writeConfig(t, "ListenAddress 127.0.0.1:0\n")
	d, _, _ := startTestDaemon(t, cfg)
	base, _ := os.ReadFile(cfg)
	first := d.listeners[0].Addr().String()

	// A second address: a new listener that serves.
	os.WriteFile(cfg, append(base, "ListenAddress localhost:0\n"...), 0o644)
	d.reload(context.Background())
	if len(d.currentKeys()) != 2 || d.stats.reloads.Load() != 1 {
		t.Fatalf("listeners after adding one: %v", d.currentKeys())
	}
	second := d.listeners[1].Addr().String()
	hostKeyOf(t, second)

	// An address already taken: the reload is refused, listeners stay.
	os.WriteFile(cfg, append(base, "ListenAddress "+second+"\n"...), 0o644)
	d.reload(context.Background())
	if d.stats.reloadErrors.Load() != 1 || len(d.currentKeys()) != 2 {
		t.Fatalf("taken address: errors %d, listeners %v", d.stats.reloadErrors.Load(), d.currentKeys())
	}

	// Back to the first address only: the second listener closes.
	os.WriteFile(cfg, base, 0o644)
	d.reload(context.Background())
	if len(d.currentKeys()) != 1 {
		t.Fatalf("listeners after removing one: %v", d.currentKeys())
	}
	if c, err := net.DialTimeout("tcp", second, time.Second); err == nil {
		c.Close()
		t.Error("removed listener still accepts")
	}
	hostKeyOf(t, first)
}
