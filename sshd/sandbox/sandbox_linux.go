//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// EnterPreauth confines the calling process for pre-auth work: no new
// privileges, non-dumpable, Landlock with no file or network access, and
// the seccomp allowlist. Call it once, after every file the process needs
// is open.
func EnterPreauth() (*Report, error) {
	r := &Report{}
	if err := setNonDumpable(r); err != nil {
		return r, err
	}
	if err := restrictLandlock(r); err != nil {
		return r, err
	}
	if err := loadSeccomp(r); err != nil {
		return r, err
	}
	return r, nil
}

// EnterPostauth makes the calling process non-dumpable.
func EnterPostauth() (*Report, error) {
	r := &Report{}
	return r, setNonDumpable(r)
}

func setNonDumpable(r *Report) error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: PR_SET_DUMPABLE: %w", err)
	}
	r.NonDumpable = true
	return nil
}

// restrictLandlock enforces a ruleset that handles every access right the
// kernel knows and grants none. go-landlock sets no_new_privs on every
// thread first.
func restrictLandlock(r *Report) error {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		r.Missing = append(r.Missing, "landlock (not in this kernel)")
		return setNoNewPrivs(r)
	}
	if err := landlock.V9.BestEffort().Restrict(); err != nil {
		return fmt.Errorf("sandbox: landlock: %w", err)
	}
	r.Landlock, r.NoNewPrivs = abi, true
	return nil
}

// setNoNewPrivs sets no_new_privs for every thread: the seccomp filter is
// loaded with TSYNC, which carries the calling thread's flag to the
// others, so the calling thread must be the one that sets it.
func setNoNewPrivs(r *Report) error {
	if err := seccomp.SetNoNewPrivs(); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	r.NoNewPrivs = true
	return nil
}

func loadSeccomp(r *Report) error {
	if !seccomp.Supported() {
		r.Missing = append(r.Missing, "seccomp (not in this kernel)")
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: preauthPolicy()}
	if err := seccomp.LoadFilter(f); err != nil {
		return fmt.Errorf("sandbox: seccomp: %w", err)
	}
	r.Seccomp, r.NoNewPrivs = true, true
	return nil
}

// ErrUnsupported is returned where the platform has no sandbox.
var ErrUnsupported = errors.New("sandbox: not supported on this platform")

// CloseOnExec marks every descriptor from 3 up close-on-exec, so that
// what the process inherited (from its launcher, say) reaches no program
// it starts; programs get only what they are given explicitly.
func CloseOnExec() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("sandbox: close_range: %w", err)
	}
	return nil
}

// DropTo makes every thread of the calling process id: supplementary
// groups, then real, effective and saved gid, then uid. A process that
// was started as root and must run as someone else calls it before it
// reads anything from a less trusted source. It checks the change took
// and that root cannot be regained.
func DropTo(id Identity) error {
	groups := make([]int, len(id.Groups))
	for i, g := range id.Groups {
		groups[i] = int(g)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("sandbox: setgroups: %w", err)
	}
	if err := syscall.Setresgid(int(id.Gid), int(id.Gid), int(id.Gid)); err != nil {
		return fmt.Errorf("sandbox: setresgid %d: %w", id.Gid, err)
	}
	if err := syscall.Setresuid(int(id.Uid), int(id.Uid), int(id.Uid)); err != nil {
		return fmt.Errorf("sandbox: setresuid %d: %w", id.Uid, err)
	}
	if os.Getuid() != int(id.Uid) || os.Geteuid() != int(id.Uid) || os.Getegid() != int(id.Gid) {
		return fmt.Errorf("sandbox: identity change to %d:%d did not take", id.Uid, id.Gid)
	}
	if id.Uid != 0 && syscall.Setresuid(0, 0, 0) == nil {
		return errors.New("sandbox: root could be regained after dropping it")
	}
	return nil
}

// SetName sets the name top and ps -o comm show for the calling thread
// (the process's, when called from its main thread): a child started
// from /proc/self/exe would otherwise be called "exe".
func SetName(name string) {
	b := append([]byte(name), 0)
	unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0, 0, 0)
}
