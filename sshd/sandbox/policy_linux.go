//go:build linux

package sandbox

import (
	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// preauthSyscalls are the system calls a pre-auth worker makes once it is
// running: the Go runtime's (memory, threads, signals, timers, the
// network poller) and I/O on descriptors it holds or receives. Anything
// else — open, socket, connect, bind, execve, fork, ptrace, kill,
// mount — fails with EPERM.
var preauthSyscalls = []string{
	// I/O on held descriptors, and receiving new ones over the monitor's socket.
	"read", "write", "readv", "writev", "pread64", "pwrite64", "close", "fcntl", "dup", "dup3",
	"recvfrom", "recvmsg", "sendto", "sendmsg", "shutdown", "getsockopt", "setsockopt",
	"getsockname", "getpeername", "fstat", "newfstatat", "lseek",
	// The network poller.
	"epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait", "eventfd2", "pipe2", "poll", "ppoll",
	// Memory.
	"mmap", "munmap", "mprotect", "madvise", "mremap", "brk", "mincore",
	// Threads, scheduling and time.
	"futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "sched_yield", "sched_getaffinity",
	"nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "getpid", "gettid", "getppid",
	"restart_syscall", "exit", "exit_group",
	// Signals among the process's own threads.
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "tgkill", "tkill",
	// Randomness and identity (read-only).
	"getrandom", "getuid", "geteuid", "getgid", "getegid", "getrlimit", "prlimit64", "uname",
}

// preauthPolicy allows preauthSyscalls and clone for new threads only.
// clone3 passes its flags in memory, where a filter cannot look, so it
// fails with ENOSYS and the C library (cgo's threads) falls back to clone.
func preauthPolicy() seccomp.Policy {
	return seccomp.Policy{
		DefaultAction: seccomp.ActionErrno,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionAllow, Names: preauthSyscalls},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
			{Action: seccomp.ActionAllow, NamesWithCondtions: []seccomp.NameWithConditions{{
				Name: "clone",
				Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_THREAD},
				},
			}}},
		},
	}
}
