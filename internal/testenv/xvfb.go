package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StartXvfb starts a virtual X server on a free display that requires
// the MIT-MAGIC-COOKIE cookie (hex), which xauth records in authFile,
// and returns the display (":N"). The server is stopped with SIGTERM at
// the end of the test, so it removes its lock file and socket. A display
// whose lock names a process that is gone is stale and taken; one that
// another test's server takes first is skipped.
func StartXvfb(t testing.TB, xvfb, xauth, authFile, cookie string) string {
	t.Helper()
	for n := 91; n < 160; n++ {
		if displayInUse(n) {
			continue
		}
		display := ":" + strconv.Itoa(n)
		if out, err := exec.Command(xauth, "-f", authFile, "add", display, ".", cookie).CombinedOutput(); err != nil {
			t.Fatalf("xauth add: %v %s", err, out)
		}
		if startXvfbOn(t, xvfb, display, n, authFile) {
			return display
		}
	}
	t.Fatal("no free X display in :91 to :159")
	return ""
}

// displayInUse says whether display n's lock names a live process; a
// stale lock and socket are removed.
func displayInUse(n int) bool {
	lock, sock := "/tmp/.X"+strconv.Itoa(n)+"-lock", "/tmp/.X11-unix/X"+strconv.Itoa(n)
	if pid := lockPID(lock); pid > 0 && syscall.Kill(pid, 0) == nil {
		return true
	}
	os.Remove(lock)
	os.Remove(sock)
	return false
}

func lockPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// startXvfbOn starts Xvfb on display n and waits until it holds the
// display (its lock names it and its socket is there); false when it
// exited first (another server took the display).
func startXvfbOn(t testing.TB, xvfb, display string, n int, authFile string) bool {
	t.Helper()
	cmd := exec.Command(xvfb, display, "-auth", authFile, "-nolisten", "tcp")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	lock, sock := "/tmp/.X"+strconv.Itoa(n)+"-lock", "/tmp/.X11-unix/X"+strconv.Itoa(n)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			return false
		default:
		}
		if _, err := os.Stat(sock); err == nil && lockPID(lock) == cmd.Process.Pid {
			t.Cleanup(func() { stopXvfb(cmd, exited) })
			return true
		}
	}
	cmd.Process.Kill()
	<-exited
	t.Fatalf("Xvfb %s did not start", display)
	return false
}

func stopXvfb(cmd *exec.Cmd, exited chan struct{}) {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}
