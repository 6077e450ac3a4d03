// Package sandbox confines the processes of offload sshd's process model
// with what the kernel offers: no_new_privs, Landlock (no file access, no
// TCP bind or connect, no signals or abstract sockets outside the
// domain), a seccomp allowlist of system calls, non-dumpable processes
// and close-on-exec descriptors.
//
// # Degrading
//
// Each measure is applied where the kernel has it. What could not be
// applied is reported in the Report, which the caller logs as a warning;
// only a failure of a measure the kernel does support is an error.
//
// # Pre-auth
//
// EnterPreauth is for the process that parses a client's bytes before
// authentication. After it, opening a file, creating a socket, executing
// a program or starting a process fails with EPERM: the process can only
// use the descriptors it already holds and those it receives.
//
// # Post-auth
//
// EnterPostauth is for the process that runs as the user. It makes the
// process non-dumpable (the user cannot ptrace it or read its memory,
// which holds the session keys) and nothing else: the user's programs
// started from it need to open files, execute programs and may need
// set-user-ID programs, so no_new_privs does not apply there.
//
// # What children inherit
//
// CloseOnExec keeps descriptors from leaking into the programs a process
// starts; HangupDefault keeps an ignored SIGHUP (nohup) from leaking into
// them, so that a session's programs end when its terminal hangs up.
package sandbox

import "strings"

// Report says which measures are in force.
type Report struct {
	NoNewPrivs  bool
	NonDumpable bool
	Landlock    int  // the Landlock ABI version enforced, 0 for none
	Seccomp     bool // the system call allowlist
	// Missing lists the measures the kernel or build could not apply.
	Missing []string
}

// String summarises the report for a log line.
func (r *Report) String() string {
	var on []string
	if r.NoNewPrivs {
		on = append(on, "no_new_privs")
	}
	if r.NonDumpable {
		on = append(on, "non-dumpable")
	}
	if r.Landlock > 0 {
		on = append(on, "landlock")
	}
	if r.Seccomp {
		on = append(on, "seccomp")
	}
	s := "in force: " + strings.Join(on, ", ")
	if len(r.Missing) > 0 {
		s += "; missing: " + strings.Join(r.Missing, ", ")
	}
	return s
}
