package inproc

import (
	"os"

	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/login"
	"github.com/offload/offload/sshd/postauth"
)

// withPAMKeeper returns the login's connection settings with its
// programs run in the login's PAM session, which a PAM keeper holds
// (postauth.OpenPAMKeeper), or the settings as they are when there is
// none: UsePAM no; not root (a keeper must be root to start programs as
// the user); or a program that cannot be started again as a keeper (it
// then runs PAM's auth and account stacks only, and says so).
func (c *Conn) withPAMKeeper(l *login.Login) *connection.Config {
	cc := l.Settings()
	pc := l.PAMSession()
	if pc == nil || os.Geteuid() != 0 {
		return cc
	}
	if !c.env.PAMKeeper {
		c.log.Warn("sshd: UsePAM: no PAM session (pam_env, pam_limits, pam_loginuid): the program does not call sshd.RunChild, which runs its PAM keeper")
		return cc
	}
	out := *cc
	remote := addrPort(c.nc.RemoteAddr()).Addr().String()
	out.OpenHeldPAMSession = func(user string) (*connection.HeldPAMSession, error) {
		return postauth.OpenPAMKeeper(*pc, user, remote, c.log)
	}
	return &out
}
