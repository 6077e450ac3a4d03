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
// only, which goes back to other goroutines only once its own identity
// is restored and checked, and is retired otherwise.
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
		runtime.LockOSThread() // unlocked only once the thread is itself again
		own, err := threadIdentity()
		if err == nil {
			err = becomeForFiles(id)
		}
		if err != nil {
			ch <- result{nil, err}
			return
		}
		f, err := os.OpenFile(path, flags|syscall.O_CLOEXEC, 0)
		restored := becomeForFiles(own) == nil && sameGroups(own.Groups)
		ch <- result{f, err} // after the restore: the caller sees the thread as itself again
		if restored {
			runtime.UnlockOSThread() // back to the pool: a thread per open costs a clone and an exit
		}
	}()
	r := <-ch
	return r.f, r.err
}

// threadIdentity is the calling thread's file-system identity (the
// process's, on a thread OpenAs has not changed).
func threadIdentity() (Identity, error) {
	id := Identity{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}
	groups, err := threadGroups()
	id.Groups = groups
	return id, err
}

// threadGroups reads the calling thread's supplementary groups (a raw
// system call, so it is this thread's and not a cached value).
func threadGroups() ([]uint32, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_GETGROUPS, 0, 0, 0)
	if e != 0 {
		return nil, fmt.Errorf("sandbox: getgroups: %w", e)
	}
	if n == 0 {
		return nil, nil
	}
	g := make([]uint32, n)
	m, _, e := syscall.RawSyscall(syscall.SYS_GETGROUPS, n, uintptr(unsafe.Pointer(&g[0])), 0)
	if e != 0 || m != n {
		return nil, fmt.Errorf("sandbox: getgroups: %w", e)
	}
	return g, nil
}

// sameGroups says whether the calling thread's groups are want.
func sameGroups(want []uint32) bool {
	g, err := threadGroups()
	if err != nil || len(g) != len(want) {
		return false
	}
	for i := range g {
		if g[i] != want[i] {
			return false
		}
	}
	return true
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
