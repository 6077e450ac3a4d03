package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// perfRecorder attaches `perf record` to an offload server for the length
// of one transfer, so the profile shows where the server spends its time
// under exactly the benchmark's load. offload sshd is one Go process, so
// attaching to its pid sees every connection; OpenSSH forks a process per
// connection after perf attached, so it is not profiled.
type perfRecorder struct {
	perf string // perf binary
	dir  string // where the .data files go
}

// start begins recording sv and returns the function that stops it.
func (p *perfRecorder) start(sv *server, kind, cipher string) func() error {
	if p == nil || sv.spec.OpenSSH {
		return func() error { return nil }
	}
	name := strings.NewReplacer("@openssh.com", "", "/", "_").Replace(fmt.Sprintf("%s-%s-%s", sv.spec.Name, kind, cipher))
	out := filepath.Join(p.dir, strings.TrimSuffix(name, "-")+".data")
	cmd := exec.Command(p.perf, "record", "-q", "-e", "cpu-clock", "-F", "999", "-g",
		"-p", fmt.Sprint(sv.cmd.Process.Pid), "-o", out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return func() error { return fmt.Errorf("bench: perf: %w", err) }
	}
	time.Sleep(300 * time.Millisecond) // let perf attach before the load starts
	return func() error {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
			return nil
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return fmt.Errorf("bench: perf record for %s did not stop", out)
		}
	}
}

// newPerfRecorder checks that perf exists and makes the output directory.
func newPerfRecorder(dir string) (*perfRecorder, error) {
	if dir == "" {
		return nil, nil
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		return nil, fmt.Errorf("bench: -perf needs perf (apt-get install linux-perf): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return &perfRecorder{perf: perf, dir: dir}, nil
}
