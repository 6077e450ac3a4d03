package auth

import (
	"errors"
	"net/netip"
	"os/user"
	"strconv"

	"github.com/offload/offload/sshd/account"
	"github.com/offload/offload/sshd/sandbox"
)

// target is the user a conversation is about. denied says why the user
// may not log in at all; such a user is still answered like a real one,
// so that clients cannot tell which accounts exist.
type target struct {
	u      *user.User
	sys    *account.Account // passwd and shadow entries for the policy
	root   bool
	denied error
	ident  *sandbox.Identity // for reading the user's files, once looked up
}

// resolve looks the user up and applies the account-wide policy
// (OpenSSH's getpwnamallow and allowed_user).
func (s *decider) resolve(name string) *target {
	u, err := s.cfg.lookup(name)
	if err != nil {
		s.logf(s.log.Info, "Invalid user %s from %s port %d", name, s.addr, s.port)
		return &target{denied: rejectf(err, "invalid user")}
	}
	a := &target{u: u, root: u.Uid == "0", sys: s.cfg.sysAccount(u)}
	if a.denied = s.cfg.userAllowed(a, name, s.addr); a.denied != nil {
		s.log.Info("auth: user not allowed", "user", name, "why", a.denied)
		return a
	}
	if err := s.applyPolicy(a); err != nil {
		a.denied = err
	}
	return a
}

// sysAccount returns the passwd/shadow view of u for the policy.
func (c *settings) sysAccount(u *user.User) *account.Account {
	lookup := c.LookupAccount
	if lookup == nil && c.LookupUser == nil {
		lookup = account.Files{}.Lookup
	}
	if lookup != nil {
		if a, err := lookup(u.Username); err == nil {
			return a
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &account.Account{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
}

// policy is the account.Policy of this configuration.
func (c *settings) policy() *account.Policy {
	return &account.Policy{UsePAM: c.UsePAM, Chroot: c.SkipShellCheck, DenyUsers: c.DenyUsers,
		AllowUsers: c.AllowUsers, DenyGroups: c.DenyGroups, AllowGroups: c.AllowGroups, Now: c.now}
}

// applyPolicy runs the account policy, logging a refusal in OpenSSH's
// words.
func (s *decider) applyPolicy(a *target) error {
	notices, err := s.cfg.policy().Allowed(a.sys, account.Source{Addr: s.addr})
	var r *account.Refusal
	if errors.As(err, &r) {
		for _, line := range r.Log {
			s.logf(s.log.Info, "%s", line)
		}
		return rejectf(err, "account refused")
	}
	if err != nil {
		return rejectf(err, "account policy")
	}
	s.notices = append(s.notices, notices...)
	return nil
}

// userAllowed applies OnlyUser. PermitRootLogin is applied per method by
// rootAllows, the lists by the account policy.
func (c *settings) userAllowed(a *target, name string, addr netip.Addr) error {
	if c.OnlyUser != "" && name != c.OnlyUser {
		return reject("not the user the server runs as")
	}
	return nil
}

// rootAllows applies PermitRootLogin to a login by method; forced says
// whether a forced command comes with it.
func (c *settings) rootAllows(a *target, method string, forced bool) error {
	if !a.root {
		return nil
	}
	switch c.root {
	case RootYes:
		return nil
	case RootProhibitPassword:
		if method == methodPublicKey {
			return nil
		}
	case RootForcedCommandsOnly:
		if method == methodPublicKey && forced {
			return nil
		}
	}
	return reject("root login by " + method + " refused by PermitRootLogin " + string(c.root))
}
