package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Detaching, as sshd does without -D, -d, -i, -t or -T: the command
// starts itself again as a daemon (a new session, stdin and stdout on
// /dev/null, its stderr the caller's until it serves) and returns once
// that daemon listens and has written its PidFile, with status 0; if the
// daemon fails to start, with the daemon's status and after its error
// message. Go cannot fork a running runtime, hence the second exec: the
// daemon is the same binary and arguments with detachEnv naming the
// descriptor of a pipe on which it reports that it serves.

// detachEnv names, in the daemon's environment, the descriptor of the
// pipe it closes once it serves.
const detachEnv = "OFFLOAD_SSHD_DETACHED_FD"

// exitStatus is an error that ends the command with a status and no
// message (the daemon printed its own).
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// detaches reports whether the command starts a daemon and returns.
func (o *sshdOptions) detaches() bool {
	return !o.foreground && o.debug == 0 && !o.inetd && !o.test && !o.print && os.Getenv(detachEnv) == ""
}

// detach starts the daemon and waits until it serves or exits.
func detach(stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), detachEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	var b [1]byte
	if n, _ := r.Read(b[:]); n == 1 {
		return cmd.Process.Release() // serving: the daemon goes on alone
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return exitStatus(ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	return exitStatus(255) // exited 0 without serving
}

// detachedReady returns, in a daemon started by detach, a function that
// tells the waiting command it serves and puts /dev/null in place of the
// daemon's stdin, stdout and stderr; elsewhere a function that does
// nothing. It removes detachEnv from the environment, so that the
// daemon's own children do not see it.
func detachedReady() (daemonized bool, ready func()) {
	v := os.Getenv(detachEnv)
	os.Unsetenv(detachEnv)
	fd, err := strconv.Atoi(v)
	if v == "" || err != nil || fd < 3 {
		return false, func() {}
	}
	pipe := os.NewFile(uintptr(fd), "detach")
	return true, func() {
		if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
			for _, std := range []int{0, 1, 2} {
				unix.Dup2(int(null.Fd()), std)
			}
			null.Close()
		}
		pipe.Write([]byte{1})
		pipe.Close()
	}
}
