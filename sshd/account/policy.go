package account

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/offload/offload/sshd/match"
)

// Reason is why Policy refused an account.
type Reason string

// Reasons, each with the log text OpenSSH writes for it.
const (
	Locked             Reason = "locked"               // "User U not allowed because account is locked"
	Expired            Reason = "expired"              // "Account U has expired" (then the locked line)
	NoShell            Reason = "no-shell"             // "User U not allowed because shell S does not exist"
	ShellNotExecutable Reason = "shell-not-executable" // "... because shell S is not executable"
	DeniedUser         Reason = "deny-users"           // "User U from H not allowed because listed in DenyUsers"
	NotAllowedUser     Reason = "allow-users"          // "... because not listed in AllowUsers"
	NoGroups           Reason = "no-groups"            // "... because not in any group"
	DeniedGroup        Reason = "deny-groups"          // "... because a group is listed in DenyGroups"
	NotAllowedGroup    Reason = "allow-groups"         // "... because none of user's groups are listed in AllowGroups"
)

// Refusal is an account Policy does not let log in. Log holds the lines
// OpenSSH logs for the same refusal, in its words; the user is then
// treated as an invalid user (OpenSSH's "Failed password for invalid
// user ..." follows).
type Refusal struct {
	Reason Reason
	User   string
	Log    []string
}

func (r *Refusal) Error() string { return "account: " + strings.Join(r.Log, "; ") }

// Source is where a login comes from: Host is the client's name (its
// address as text with UseDNS no), Addr its address.
type Source struct {
	Host string
	Addr netip.Addr
}

// Policy is OpenSSH's allowed_user: the account checks made for every
// authentication method before any method runs. The zero value checks
// lock and expiry (as without PAM) and the shell.
type Policy struct {
	// UsePAM leaves the lock and expiry checks to PAM's account stack,
	// as OpenSSH does with UsePAM yes.
	UsePAM bool
	// Chroot is set when ChrootDirectory applies: the shell is then not
	// checked (it is looked up inside the chroot).
	Chroot bool
	// DenyUsers, AllowUsers: patterns "user" or "user@host" (host a
	// pattern list with ! negation matched against the name and the
	// address, CIDR allowed). DenyGroups, AllowGroups: group name
	// patterns. Applied in that order, as OpenSSH does.
	DenyUsers, AllowUsers, DenyGroups, AllowGroups []string
	// Groups returns the names of the account's groups, primary and
	// supplementary (nil means the system's group database).
	Groups func(a *Account) ([]string, error)
	// Now is the clock for expiry (nil means time.Now).
	Now func() time.Time
}

// Allowed returns nil when a may try to log in from src, or a *Refusal.
// Like OpenSSH it also returns the notices for the user ("Your account
// will expire in N days.").
func (p *Policy) Allowed(a *Account, src Source) (notices []string, err error) {
	if !p.UsePAM {
		var r *Refusal
		if r, notices = p.lockedOrExpired(a); r != nil {
			return nil, r
		}
	}
	if !p.Chroot {
		if r := checkShell(a); r != nil {
			return nil, r
		}
	}
	if r := p.checkLists(a, src); r != nil {
		return nil, r
	}
	return notices, nil
}

func refuse(reason Reason, a *Account, lines ...string) *Refusal {
	return &Refusal{Reason: reason, User: a.Name, Log: lines}
}

func (p *Policy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// today is the day number shadow(5) counts in.
func today(t time.Time) int64 { return t.Unix() / 86400 }

// lockedOrExpired is OpenSSH's platform_locked_account on Linux: an
// expired account, or a password field starting with "!".
func (p *Policy) lockedOrExpired(a *Account) (*Refusal, []string) {
	lockedLine := fmt.Sprintf("User %.100s not allowed because account is locked", a.Name)
	var notices []string
	if s := a.Shadow; s != nil && s.Expire != -1 {
		left := s.Expire - today(p.now())
		if left < 0 {
			return refuse(Expired, a, fmt.Sprintf("Account %.100s has expired", a.Name), lockedLine), nil
		}
		if left <= s.Warn {
			notices = append(notices, fmt.Sprintf("Your account will expire in %d day%s.", left, plural(left)))
		}
	}
	if h := a.Hash(); strings.HasPrefix(h, "!") {
		return refuse(Locked, a, lockedLine), nil
	}
	return nil, notices
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// PasswordExpiry is the state of a's password without PAM, as OpenSSH's
// auth_shadow_pwexpired (checked at password authentication only).
// Expired means the login must be restricted to changing the password:
// OpenSSH lets it in with a pty, no forwarding, runs passwd(1) and ends.
type PasswordExpiry struct {
	Expired bool
	Log     string // OpenSSH's log line when expired
	Notice  string // "Your password will expire in N days." when warned
}

// CheckPasswordExpiry applies the shadow password age fields.
func (p *Policy) CheckPasswordExpiry(a *Account) PasswordExpiry {
	s := a.Shadow
	if s == nil {
		return PasswordExpiry{}
	}
	if s.LastChange == 0 {
		return PasswordExpiry{Expired: true, Log: fmt.Sprintf("User %.100s password has expired (root forced)", a.Name)}
	}
	if s.Max == -1 || s.LastChange == -1 {
		return PasswordExpiry{}
	}
	left := s.LastChange + s.Max - today(p.now())
	if left < 0 {
		return PasswordExpiry{Expired: true, Log: fmt.Sprintf("User %.100s password has expired (password aged)", a.Name)}
	}
	if left <= s.Warn {
		return PasswordExpiry{Notice: fmt.Sprintf("Your password will expire in %d day%s.", left, plural(left))}
	}
	return PasswordExpiry{}
}

// checkShell refuses a login shell that does not exist or is not an
// executable regular file. OpenSSH does not consult /etc/shells (PAM's
// pam_shells does, where configured), and neither does this.
func checkShell(a *Account) *Refusal {
	sh := a.LoginShell()
	fi, err := os.Stat(sh)
	if err != nil {
		return refuse(NoShell, a, fmt.Sprintf("User %.100s not allowed because shell %.100s does not exist", a.Name, sh))
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return refuse(ShellNotExecutable, a, fmt.Sprintf("User %.100s not allowed because shell %.100s is not executable", a.Name, sh))
	}
	return nil
}

// checkLists applies DenyUsers, AllowUsers, DenyGroups and AllowGroups.
func (p *Policy) checkLists(a *Account, src Source) *Refusal {
	host := src.Host
	if host == "" && src.Addr.IsValid() {
		host = src.Addr.String()
	}
	why := func(reason Reason, text string) *Refusal {
		return refuse(reason, a, fmt.Sprintf("User %.100s from %.100s not allowed because %s", a.Name, host, text))
	}
	for _, pat := range p.DenyUsers {
		if match.User(a.Name, src.Host, src.Addr.Unmap(), pat) {
			return why(DeniedUser, "listed in DenyUsers")
		}
	}
	if len(p.AllowUsers) > 0 && !matchAny(a.Name, src, p.AllowUsers) {
		return why(NotAllowedUser, "not listed in AllowUsers")
	}
	if len(p.DenyGroups) == 0 && len(p.AllowGroups) == 0 {
		return nil
	}
	groups, err := p.groups(a)
	if err != nil || len(groups) == 0 {
		return why(NoGroups, "not in any group")
	}
	if matchGroups(groups, p.DenyGroups) {
		return why(DeniedGroup, "a group is listed in DenyGroups")
	}
	if len(p.AllowGroups) > 0 && !matchGroups(groups, p.AllowGroups) {
		return why(NotAllowedGroup, "none of user's groups are listed in AllowGroups")
	}
	return nil
}

func matchAny(name string, src Source, pats []string) bool {
	for _, pat := range pats {
		if match.User(name, src.Host, src.Addr.Unmap(), pat) {
			return true
		}
	}
	return false
}

func matchGroups(groups, pats []string) bool {
	for _, g := range groups {
		for _, pat := range pats {
			if match.Glob(g, pat) {
				return true
			}
		}
	}
	return false
}

func (p *Policy) groups(a *Account) ([]string, error) {
	if p.Groups != nil {
		return p.Groups(a)
	}
	return SystemGroups(a)
}

// SystemGroups returns the names of a's groups from the system's group
// database (getgrouplist through os/user).
func SystemGroups(a *Account) ([]string, error) {
	u, err := user.Lookup(a.Name)
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil {
			names = append(names, g.Name)
		}
	}
	return names, nil
}

// NologinFile is where /etc/nologin is.
const NologinFile = "/etc/nologin"

// maxNologin bounds the text shown from the nologin file.
const maxNologin = 64 << 10

// Nologin is OpenSSH's check without PAM at session start: while path
// (NologinFile when "") exists, accounts other than root may not log in;
// the file's text is shown to them and the session ends (OpenSSH exits
// with status 254). Log is OpenSSH's line. With PAM, pam_nologin in the
// account stack does this instead.
func Nologin(a *Account, path string) (refused bool, text []byte, log string) {
	if path == "" {
		path = NologinFile
	}
	if a.UID == 0 {
		return false, nil, ""
	}
	if _, err := os.Stat(path); err != nil {
		return false, nil, ""
	}
	log = fmt.Sprintf("User %.100s not allowed because %s exists", a.Name, path)
	if f, err := os.Open(path); err == nil {
		text, _ = io.ReadAll(io.LimitReader(f, maxNologin))
		f.Close()
	}
	return true, text, log
}
