package connection

import (
	"strings"
	"sync"

	"github.com/offload/offload/sshd/match"
	"github.com/offload/offload/sshd/wire"
)

// Bounds on what a client may ask of a session.
const (
	maxEnvVars     = 64
	maxEnvName     = 256
	maxEnvValue    = 32 << 10
	maxEnvTotal    = 256 << 10
	maxCommandSize = 256 << 10
)

// session is the state of one session channel.
type session struct {
	m             *mux
	c             *channel
	env           []string // accepted client variables, NAME=value
	envBytes      int
	pty           *ptyRequest
	x11           *x11Display // set by x11-req
	subsystemName string      // the subsystem requested, for ChannelTimeout

	mu      sync.Mutex
	proc    *process // set once the program started
	started bool
	pending []func() // goroutines to start once the request is answered
}

// later queues f to run in a goroutine after the current request's
// reply, so the reply precedes any output of the started program.
func (s *session) later(f func()) { s.pending = append(s.pending, f) }

// runPending starts the queued goroutines.
func (s *session) runPending() {
	for _, f := range s.pending {
		s.m.goSafe("session", s.c, f)
	}
	s.pending = nil
}

// serveSession processes the requests of a session channel in order,
// until the channel dies.
func (m *mux) serveSession(c *channel, _ []byte) {
	s := &session{m: m, c: c}
	if c.confirm() != nil {
		return
	}
	defer s.closeX11()
	for r := range c.reqs {
		c.reqBytes.Add(-int64(len(r.payload)))
		ok := s.handle(r)
		c.reply(r, ok)
		s.runPending()
	}
	s.wait()
}

// handle runs one request and reports success.
func (s *session) handle(r requestMsg) bool {
	var err error
	switch r.kind {
	case "env":
		err = s.setEnv(r.payload)
	case "pty-req":
		err = s.ptyReq(r.payload)
	case "window-change":
		err = s.windowChange(r.payload)
	case "signal":
		err = s.signal(r.payload)
	case "exec":
		err = s.exec(r.payload)
	case "shell":
		err = s.shell(r.payload)
	case "subsystem":
		err = s.subsystem(r.payload)
	case "x11-req":
		err = s.x11Req(r.payload)
	case "auth-agent-req@openssh.com":
		err = s.agentReq(r.payload)
	default:
		err = refuse(trunc(r.kind), "unsupported session request")
	}
	if err != nil {
		s.m.log.Info("connection: session request failed", "channel", s.c.id, "type", trunc(r.kind), "err", err)
		return false
	}
	return true
}

// wait returns once the session's program (if any) has been reaped.
func (s *session) wait() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		<-p.done
	}
}

func (s *session) setEnv(b []byte) error {
	r := wire.NewReader(b)
	name, value := r.String("name"), r.String("value")
	if err := r.Done(); err != nil {
		return refuse("env", "malformed: %v", err)
	}
	switch {
	case len(s.env) >= maxEnvVars:
		return refuse("env", "more than %d variables", maxEnvVars)
	case len(name) == 0 || len(name) > maxEnvName || strings.ContainsAny(name, "=\x00"):
		return refuse("env", "bad variable name")
	case len(value) > maxEnvValue || s.envBytes+len(name)+len(value) > maxEnvTotal:
		return refuse("env", "variable %s too large", trunc(name))
	case strings.IndexByte(value, 0) >= 0:
		return refuse("env", "NUL in value of %s", trunc(name))
	case !match.AnyGlob(name, s.m.cfg.AcceptEnv):
		return refuse("env", "%s not in AcceptEnv", trunc(name))
	}
	s.env = append(s.env, name+"="+value)
	s.envBytes += len(name) + len(value)
	return nil
}

// begin marks the session started; only one program per session.
func (s *session) begin(req string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return refuse(req, "session already started")
	}
	s.started = true
	return nil
}

func (s *session) exec(b []byte) error {
	r := wire.NewReader(b)
	cmd := r.String("command")
	if err := r.Done(); err != nil {
		return refuse("exec", "malformed: %v", err)
	}
	if len(cmd) > maxCommandSize || strings.IndexByte(cmd, 0) >= 0 {
		return refuse("exec", "bad command")
	}
	return s.run("exec", cmd, false)
}

func (s *session) shell(b []byte) error {
	if len(b) != 0 {
		return refuse("shell", "trailing bytes")
	}
	return s.run("shell", "", false)
}

func (s *session) subsystem(b []byte) error {
	r := wire.NewReader(b)
	name := r.String("subsystem name")
	if err := r.Done(); err != nil {
		return refuse("subsystem", "malformed: %v", err)
	}
	cmd, ok := s.m.cfg.Subsystems[name]
	if !ok {
		return refuse("subsystem", "unknown subsystem %q", trunc(name))
	}
	s.subsystemName = name
	return s.run("subsystem", cmd, true)
}

// forcedCommand is the command that replaces the client's, if any:
// sshd_config's ForceCommand wins over the key's command=, as in OpenSSH.
func (s *session) forcedCommand() string {
	if fc := s.m.cfg.ForceCommand; fc != "" {
		return fc
	}
	return s.m.perm.ForceCommand
}

// run starts what a shell, exec or subsystem request asks for, as
// OpenSSH's do_exec: a forced command replaces it (SSH_ORIGINAL_COMMAND
// carries the original: the client's command, or a subsystem's command
// line), internal-sftp is served by the SFTP server (a forced
// internal-sftp refuses anything but a subsystem), and the rest runs
// through the user's shell (cmd "" is a login shell).
func (s *session) run(req, cmd string, subsystem bool) error {
	if err := s.begin(req); err != nil {
		return err
	}
	s.m.markQoS(s.pty != nil || s.x11 != nil)
	s.c.sessionStarted(timeoutName(req, s.subsystemName))
	if s.m.cfg.Nologin {
		if refused, err := s.nologin(); refused || err != nil {
			return err
		}
	}
	var orig *string
	if fc := s.forcedCommand(); fc != "" {
		if req != "shell" {
			o := cmd
			orig = &o
		}
		cmd = fc
		if isInternalSFTP(cmd) && !subsystem {
			return s.sftpOnly()
		}
	}
	if isInternalSFTP(cmd) && subsystem {
		return s.sftp(cmd)
	}
	return s.start(req, cmd, orig)
}

// timeoutName is OpenSSH 9's ChannelTimeout name of a session.
func timeoutName(req, subsystem string) string {
	switch req {
	case "shell":
		return "session:shell"
	case "exec":
		return "session:command"
	}
	return "session:subsystem:" + subsystem
}

// isInternalSFTP reports whether a command names the in-process SFTP
// server (with or without flags).
func isInternalSFTP(cmd string) bool {
	f := strings.Fields(cmd)
	return len(f) > 0 && f[0] == InternalSFTP
}

// sftpOnly answers a session that a forced internal-sftp does not serve,
// as OpenSSH: a message and exit status 1.
func (s *session) sftpOnly() error {
	s.m.log.Warn("connection: refusing non-sftp session", "remote", s.m.remoteString())
	p := &process{done: make(chan struct{})}
	s.setProcess(p)
	s.later(func() {
		defer close(p.done)
		s.c.Write([]byte("This service allows sftp connections only.\n"))
		s.c.sendRequest("exit-status", wire.AppendUint32(nil, 1))
		s.c.Close()
	})
	return nil
}

func (s *session) setProcess(p *process) {
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
}

// hostEnvPath is the PATH given to sessions, as Debian's OpenSSH.
func hostEnvPath(uid uint32) string {
	if uid == 0 {
		return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	return "/usr/local/bin:/usr/bin:/bin:/usr/games"
}
