package auth

import (
	"net/netip"
	"os/user"
)

// account is the user a conversation is about. denied says why the user
// may not log in at all; such a user is still answered like a real one,
// so that clients cannot tell which accounts exist.
type account struct {
	u      *user.User
	root   bool
	denied error
}

// resolve looks the user up and applies the account-wide policy.
func (s *decider) resolve(name string) *account {
	u, err := s.cfg.lookup(name)
	if err != nil {
		s.log.Info("auth: invalid user", "user", name, "err", err)
		return &account{denied: rejectf(err, "invalid user")}
	}
	a := &account{u: u, root: u.Uid == "0"}
	if a.denied = s.cfg.userAllowed(a, name, s.addr); a.denied != nil {
		s.log.Info("auth: user not allowed", "user", name, "why", a.denied)
	}
	return a
}

// userAllowed applies OnlyUser and AllowUsers. PermitRootLogin is applied
// per method by rootAllows.
func (c *settings) userAllowed(a *account, name string, addr netip.Addr) error {
	if c.OnlyUser != "" && name != c.OnlyUser {
		return reject("not the user the server runs as")
	}
	if len(c.AllowUsers) > 0 && !matchAllowUsers(c.AllowUsers, name, addr) {
		return reject("not listed in AllowUsers")
	}
	return nil
}

// rootAllows applies PermitRootLogin to a login by method; forced says
// whether a forced command comes with it.
func (c *settings) rootAllows(a *account, method string, forced bool) error {
	if !a.root {
		return nil
	}
	switch c.root {
	case RootYes:
		return nil
	case RootProhibitPassword:
		if method == "publickey" {
			return nil
		}
	case RootForcedCommandsOnly:
		if method == "publickey" && forced {
			return nil
		}
	}
	return reject("root login by " + method + " refused by PermitRootLogin " + string(c.root))
}
