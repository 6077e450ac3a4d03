package connection

import (
	sysaccount "github.com/offload/offload/sshd/account"
	"github.com/offload/offload/sshd/sshlog"
)

// nologinPath is /etc/nologin (a variable for tests).
var nologinPath = sysaccount.NologinFile

// nologin applies Config.Nologin to a session about to start: while the
// file exists, a user other than root gets its text on stderr and the
// session ends with exit status 254, after the request's reply, as
// OpenSSH's child does.
func (s *session) nologin() (bool, error) {
	a, err := s.m.account()
	if err != nil {
		return false, err
	}
	refused, text, line := sysaccount.Nologin(&sysaccount.Account{Name: a.name, UID: a.uid}, nologinPath)
	if !refused {
		return false, nil
	}
	s.m.log.Info(line, sshlog.Worded(), "user", a.name)
	s.later(func() {
		s.c.stderr.Write(text)
		s.finishStatus(254)
	})
	return true, nil
}
