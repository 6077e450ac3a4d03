package login

import (
	"fmt"
	"log/slog"
	"os/user"
	"strings"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/sandbox"
)

// ChrootDirectory: the connection settings name a directory (with
// OpenSSH's %h, %u, %U and %% tokens); once the user is known, the
// tokens are expanded and the path checked as OpenSSH checks it (every
// component root's and writable by nobody else). The separated mode's
// monitor then runs the user's post-auth process confined there; the
// in-process mode starts each session program there.

// applyChroot fixes the login's chroot for user: expands the tokens,
// checks the directory and, since the login shell lives inside it, turns
// off auth's check that the shell exists on the host. A user the system
// does not know keeps the unexpanded path: authentication fails anyway.
func (l *Login) applyChroot(user string, ac *auth.Config) (*auth.Config, error) {
	dir := l.conn.ChrootDirectory
	if dir == "" || strings.EqualFold(dir, "none") {
		if dir != "" {
			c := *l.conn
			c.ChrootDirectory = ""
			l.conn = &c
		}
		return ac, nil
	}
	expanded, err := expandChroot(dir, user)
	if err != nil {
		return ac, nil
	}
	if err := sandbox.CheckChroot(expanded); err != nil {
		l.logger().Error("login: ChrootDirectory refused", "user", user, "dir", expanded, "err", err)
		return nil, fmt.Errorf("login: ChrootDirectory for %s: %w", user, err)
	}
	c := *l.conn
	c.ChrootDirectory = expanded
	l.conn = &c
	a := *ac
	a.SkipShellCheck = true
	return &a, nil
}

// expandChroot replaces %h (home), %u (user), %U (uid) and %% in dir.
func expandChroot(dir, name string) (string, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i := 0; i < len(dir); i++ {
		if dir[i] != '%' || i+1 == len(dir) {
			b.WriteByte(dir[i])
			continue
		}
		i++
		switch dir[i] {
		case 'h':
			b.WriteString(u.HomeDir)
		case 'u':
			b.WriteString(u.Username)
		case 'U':
			b.WriteString(u.Uid)
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("login: ChrootDirectory %q: unknown token %%%c", dir, dir[i])
		}
	}
	return b.String(), nil
}

// logger is Config.Logger, or one that discards.
func (l *Login) logger() *slog.Logger {
	if l.cfg.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.cfg.Logger
}
