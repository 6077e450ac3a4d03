package sshd

import (
	"os"
	"os/user"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/inproc"
)

// authDefaults is cfg (or the defaults) logging to the server's logger
// unless it has its own, with OnlyUser set to the running user when the
// server is not root: it cannot run sessions for others.
func (s *settings) authDefaults(cfg *auth.Config) *auth.Config {
	var a auth.Config
	if cfg != nil {
		a = *cfg
	}
	if os.Geteuid() != 0 && a.OnlyUser == "" {
		if u, err := user.Current(); err == nil {
			a.OnlyUser = u.Username
		}
	}
	if a.Logger == nil {
		a.Logger = s.log
	}
	if a.OnResult == nil && s.Auth != nil {
		a.OnResult = s.Auth.OnResult // per-connection settings count where the server's do
	}
	if a.LoginGraceTime == 0 && s.LoginGraceTime > 0 {
		a.LoginGraceTime = s.LoginGraceTime // bounds a PAM dialog too
	}
	return &a
}

// connDefaults is cfg (or the defaults) logging to the server's logger
// unless it has its own, with the login records of a root in-process
// server.
func (s *settings) connDefaults(cfg *connection.Config) *connection.Config {
	var c connection.Config
	if cfg != nil {
		c = *cfg
	}
	if c.Logger == nil {
		c.Logger = s.log
	}
	if c.Sessions == nil && s.recordsOn() && s.Separation == nil {
		c.Sessions = inproc.FileRecorder{}
	}
	return &c
}

// recordsOn reports whether login records are written: by a root server,
// unless Config.NoLoginRecords.
func (s *settings) recordsOn() bool { return !s.NoLoginRecords && os.Geteuid() == 0 }
