package connection

import (
	"os/exec"
	"path/filepath"
	"strings"
)

// systemRC is OpenSSH's /etc/ssh/sshrc (a variable for tests).
var systemRC = "/etc/ssh/sshrc"

// prelude is what runs as the user before a session's program, as
// OpenSSH's do_rc_files: ~/.ssh/rc, else /etc/ssh/sshrc, else (with X11
// forwarding) xauth adding the client's cookie. The rc files get "proto
// cookie" on stdin when X11 is forwarded and are expected to install it
// themselves.
type prelude struct {
	argv  []string
	input string
	what  string // for logs
}

// prelude picks what to run; nil for nothing. ~/.ssh/rc is skipped for
// subsystems, under sshd_config's ForceCommand, with PermitUserRC no and
// with no-user-rc.
func (s *session) prelude(a *account, subsystem bool) *prelude {
	var input string
	if x := s.x11; x != nil {
		input = x.proto + " " + x.cookie + "\n"
	}
	userRC := filepath.Join(a.home, ".ssh", "rc")
	if !subsystem && s.m.cfg.ForceCommand == "" && !s.m.cfg.NoUserRC && !s.m.perm.NoUserRC &&
		a.home != "" && userFileExists(s.m.hostPath(userRC)) {
		return &prelude{argv: []string{a.shell, "-c", "/bin/sh " + shellQuote(userRC)}, input: input, what: userRC}
	}
	if userFileExists(s.m.hostPath(systemRC)) {
		return &prelude{argv: []string{"/bin/sh", systemRC}, input: input, what: systemRC}
	}
	if x := s.x11; x != nil {
		in := "remove " + x.authDisplay + "\nadd " + x.authDisplay + " " + x.proto + " " + x.cookie + "\n"
		return &prelude{argv: []string{s.m.cfg.XAuthLocation, "-q", "-"}, input: in, what: "xauth"}
	}
	return nil
}

// hostPath is a path of the user's world as the connection layer sees
// it: inside ChrootDirectory when sessions are chrooted.
func (m *mux) hostPath(p string) string {
	if m.cfg.ChrootDirectory == "" {
		return p
	}
	return filepath.Join(m.cfg.ChrootDirectory, p)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// runPrelude runs p to its end with the session's environment, directory
// and identity, its output going where the program's will.
func (s *session) runPrelude(a *account, p *prelude, cio *childIO) {
	if p == nil {
		return
	}
	c := &exec.Cmd{Path: p.argv[0], Args: p.argv}
	s.prepare(c, a, nil)
	c.Stdin = strings.NewReader(p.input)
	c.Stdout, c.Stderr = cio.stdout, cio.stderr
	if err := s.startChild(c); err != nil {
		s.m.log.Warn("connection: cannot run "+p.what, "err", err)
		s.c.stderr.Write([]byte("Could not run " + p.what + "\r\n"))
		return
	}
	st := s.reap(waitProcess(c))
	if st != nil && !st.Success() {
		s.m.log.Info("connection: "+p.what+" failed", "status", st.String())
	}
}
