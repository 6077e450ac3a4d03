//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// Identity is an account's uid, gid and supplementary groups.
type Identity struct {
	Uid, Gid uint32
	Groups   []uint32
}

// OpenAs opens path with flags as id would: the permission checks of
// every directory on the way and of the file itself are id's, not the
// calling process's, so a root process reading a user's file cannot be
// led by a symbolic link to a file only root may read. It changes the
// file-system identity (setfsuid, setfsgid, setgroups) of one OS thread
// only, which is then retired rather than given back to other goroutines.
// A process that is not root can only open as itself.
func OpenAs(id Identity, path string, flags int) (*os.File, error) {
	if os.Geteuid() != 0 {
		if id.Uid != uint32(os.Geteuid()) {
			return nil, fmt.Errorf("sandbox: open %s as uid %d: not root", path, id.Uid)
		}
		return os.OpenFile(path, flags, 0)
	}
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := becomeForFiles(id); err != nil {
			ch <- result{nil, err}
			return
		}
		f, err := os.OpenFile(path, flags|syscall.O_CLOEXEC, 0)
		ch <- result{f, err}
	}()
	r := <-ch
	return r.f, r.err
}

// becomeForFiles sets the calling thread's groups, fsgid and fsuid (raw
// system calls: the C library and Go would apply them to every thread).
func becomeForFiles(id Identity) error {
	var groups unsafe.Pointer
	if len(id.Groups) > 0 {
		groups = unsafe.Pointer(&id.Groups[0])
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(id.Groups)), uintptr(groups), 0); e != 0 {
		return fmt.Errorf("sandbox: setgroups: %w", e)
	}
	syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(id.Gid), 0, 0)
	syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(id.Uid), 0, 0)
	// setfsuid reports the previous value, never an error: check it took.
	if prev, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, ^uintptr(0), 0, 0); uint32(prev) != id.Uid {
		return fmt.Errorf("sandbox: setfsuid %d did not take", id.Uid)
	}
	if prev, _, _ := syscall.RawSyscall(syscall.SYS_SETFSGID, ^uintptr(0), 0, 0); uint32(prev) != id.Gid {
		return fmt.Errorf("sandbox: setfsgid %d did not take", id.Gid)
	}
	return nil
}
