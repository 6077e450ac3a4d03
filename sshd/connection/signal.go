package connection

import (
	"fmt"
	"syscall"

	"github.com/offload/offload/sshd/wire"
)

// signals maps SSH signal names (RFC 4254 §6.10, without "SIG") to
// signals. The first block is the RFC's list; the rest are accepted as
// OpenSSH does and named in exit-signal.
var signals = map[string]syscall.Signal{
	"ABRT": syscall.SIGABRT, "ALRM": syscall.SIGALRM, "FPE": syscall.SIGFPE,
	"HUP": syscall.SIGHUP, "ILL": syscall.SIGILL, "INT": syscall.SIGINT,
	"KILL": syscall.SIGKILL, "PIPE": syscall.SIGPIPE, "QUIT": syscall.SIGQUIT,
	"SEGV": syscall.SIGSEGV, "TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1,
	"USR2": syscall.SIGUSR2,

	"BUS": syscall.SIGBUS, "CHLD": syscall.SIGCHLD, "CONT": syscall.SIGCONT,
	"STOP": syscall.SIGSTOP, "TSTP": syscall.SIGTSTP, "TTIN": syscall.SIGTTIN,
	"TTOU": syscall.SIGTTOU, "TRAP": syscall.SIGTRAP, "SYS": syscall.SIGSYS,
	"XCPU": syscall.SIGXCPU, "XFSZ": syscall.SIGXFSZ, "WINCH": syscall.SIGWINCH,
	"URG": syscall.SIGURG, "PROF": syscall.SIGPROF, "VTALRM": syscall.SIGVTALRM,
}

var signalNames = func() map[syscall.Signal]string {
	m := make(map[syscall.Signal]string, len(signals))
	for n, s := range signals {
		m[s] = n
	}
	return m
}()

// signalName names sig for exit-signal; unknown signals get a name in
// the local extension form RFC 4254 allows.
func signalName(sig syscall.Signal) string {
	if n, ok := signalNames[sig]; ok {
		return n
	}
	return fmt.Sprintf("SIG%d@offload", int(sig))
}

// signal delivers a "signal" request to the session's process.
func (s *session) signal(b []byte) error {
	r := wire.NewReader(b)
	name := r.String("signal name")
	if err := r.Done(); err != nil {
		return refuse("signal", "malformed: %v", err)
	}
	sig, ok := signals[name]
	if !ok {
		return refuse("signal", "unknown signal %q", trunc(name))
	}
	p := s.process()
	if p == nil {
		return refuse("signal", "%v", errNoProcess)
	}
	select { // a signal right after exec waits for the program to start
	case <-p.started:
	case <-s.c.ctx.Done():
		return refuse("signal", "%v", ErrClosed)
	}
	if p.cmd == nil || p.cmd.Process == nil {
		return refuse("signal", "%v", errNoProcess)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return refuse("signal", "%v", err)
	}
	return nil
}

// process returns the running process, or nil.
func (s *session) process() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}
