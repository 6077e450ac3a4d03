package auth

import (
	"context"
	"log/slog"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/offload/offload/sshd/account"
	"github.com/offload/offload/sshd/pam"
)

// RootLogin is the PermitRootLogin policy for accounts with uid 0.
type RootLogin string

// PermitRootLogin values, as in sshd_config.
const (
	RootYes                RootLogin = "yes"
	RootNo                 RootLogin = "no"
	RootProhibitPassword   RootLogin = "prohibit-password" // the default
	RootForcedCommandsOnly RootLogin = "forced-commands-only"
)

// Defaults used for zero Config fields.
const (
	DefaultMaxAuthTries       = 6
	DefaultAuthorizedKeysFile = ".ssh/authorized_keys"
	// DefaultLoginGraceTime is OpenSSH's LoginGraceTime default, and the
	// only declaration of it: a LoginGraceTime of 0 means it in every
	// configuration type of offload (auth.Config, sshd.Config,
	// monitor.Config, ipc.ChildConfig) and a negative one means no limit;
	// only sshd_config's text spells no limit as 0, as OpenSSH's does
	// (sshd/config).
	DefaultLoginGraceTime = 120 * time.Second
	// MaxFileSize bounds authorized_keys, principals and CA files.
	MaxFileSize = 1 << 20
	// MaxLineLength bounds one line of those files.
	MaxLineLength = 64 << 10
	// MinRSABits is the smallest RSA key (user or CA) accepted, as
	// OpenSSH's RequiredRSASize.
	MinRSABits = 1024
)

// DefaultPublicKeyAlgorithms are the signature algorithms accepted for
// publickey authentication when Config.PublicKeyAlgorithms is nil. As in
// OpenSSH, ssh-rsa (RSA with SHA-1) is not among them.
var DefaultPublicKeyAlgorithms = []string{
	"ssh-ed25519", "ssh-ed25519-cert-v01@openssh.com",
	"sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519-cert-v01@openssh.com",
	"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
	"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384-cert-v01@openssh.com",
	"ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521-cert-v01@openssh.com",
	"sk-ecdsa-sha2-nistp256@openssh.com", "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
	"rsa-sha2-512", "rsa-sha2-512-cert-v01@openssh.com",
	"rsa-sha2-256", "rsa-sha2-256-cert-v01@openssh.com",
}

// DefaultCASignatureAlgorithms are the signature algorithms accepted on
// certificates (made by the CA) when Config.CASignatureAlgorithms is nil.
var DefaultCASignatureAlgorithms = []string{
	"ssh-ed25519", "sk-ssh-ed25519@openssh.com",
	"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
	"sk-ecdsa-sha2-nistp256@openssh.com", "rsa-sha2-512", "rsa-sha2-256",
}

// Config is the user authentication policy. The zero value accepts
// publickey authentication against ~/.ssh/authorized_keys with OpenSSH's
// defaults; Run does not modify it and it may be shared by connections.
type Config struct {
	// AuthorizedKeysFiles are file patterns, absolute or relative to the
	// user's home, with the tokens %h (home), %u (user name), %U (uid)
	// and %%. Nil means DefaultAuthorizedKeysFile; a single "none"
	// disables authorized_keys.
	AuthorizedKeysFiles []string

	// TrustedUserCAKeys is a file of CA public keys (one per line, as in
	// authorized_keys without options); user certificates signed by one
	// of them are accepted. Empty means none.
	TrustedUserCAKeys string

	// RevokedKeys, when set, is an OpenSSH KRL (ssh-keygen -k) or a file
	// of public keys (authorized_keys format, no options) that may not
	// log in: a listed key, certificate key or CA is refused. A file that
	// cannot be read or parsed refuses every key.
	RevokedKeys string

	// AuthorizedPrincipalsFile, when set (a pattern like
	// AuthorizedKeysFiles), lists the principals accepted for the user in
	// certificates from TrustedUserCAKeys, one per line, optionally
	// preceded by authorized_keys options. When empty, a certificate must
	// name the user name as a principal.
	AuthorizedPrincipalsFile string

	// AuthorizedKeysCommand, when set (and not "none"), is a program
	// (absolute path, owned by root and not writable by others, as every
	// directory above it) whose output is read as more authorized_keys
	// lines after AuthorizedKeysFiles found no match, run as
	// AuthorizedKeysCommandUser. Arguments take the tokens %%, %C, %D,
	// %f, %h, %k, %t, %U and %u (OpenSSH 10's; %C is "client-address
	// client-port server-address server-port", the server's half empty
	// unless NewConnAuthority was given it, %D is empty: no routing
	// domains); with none, the user name is the argument.
	// AuthorizedPrincipalsCommand is the same for principals of
	// certificates from TrustedUserCAKeys (after AuthorizedPrincipalsFile),
	// with the tokens %%, %C, %D, %F, %f, %h, %i, %K, %k, %s, %T, %t, %U
	// and %u.
	// A command that fails, exits non-zero, writes more than MaxFileSize
	// bytes or outlives CommandTimeout is not used.
	AuthorizedKeysCommand, AuthorizedKeysCommandUser             string
	AuthorizedPrincipalsCommand, AuthorizedPrincipalsCommandUser string
	// CommandTimeout bounds those commands (0: DefaultCommandTimeout).
	CommandTimeout time.Duration

	// PasswordAuthentication enables the "password" method. The
	// password is checked by PasswordCallback when set (it reports
	// whether password is right for user), else by PAM's auth stack with
	// UsePAM, else against the shadow database (LookupAccount).
	PasswordAuthentication bool
	PasswordCallback       func(user, password string) (bool, error)

	// KbdInteractiveAuthentication enables "keyboard-interactive"
	// (RFC 4256): with UsePAM the prompts of PAM's auth stack, otherwise
	// one "Password: " prompt checked as the password method checks.
	KbdInteractiveAuthentication bool

	// PermitEmptyPasswords lets accounts with an empty password log in
	// with the password methods.
	PermitEmptyPasswords bool

	// UsePAM runs password and keyboard-interactive through PAM's auth
	// stack and PAM's account stack after every method (publickey
	// too), as OpenSSH's UsePAM yes; account lock and expiry are then
	// PAM's. PAM selects the service ("sshd" by default).
	UsePAM bool
	PAM    pam.Config

	// OnResult, when set, is told each authentication outcome OpenSSH
	// logs as Accepted, Failed or Partial: the method ("publickey",
	// "password", "keyboard-interactive", "none") and "accepted",
	// "failed" or "partial" (for metrics). The "none" request clients
	// send first is not a failure here, as OpenSSH does not log it. It
	// runs where the decision is made (the monitor, when separated) and
	// must not block.
	OnResult func(method, result string)

	// AuthenticationMethods, when not empty, are lists of methods of
	// which one must be completed, in order, for a login (OpenSSH's
	// "publickey,password publickey,keyboard-interactive"); a method
	// may carry a submethod ("keyboard-interactive:pam"). Lists naming
	// a disabled method are dropped, as in OpenSSH. Empty means any
	// single method ("any").
	AuthenticationMethods [][]string

	// DenyUsers (patterns like AllowUsers), AllowGroups and DenyGroups
	// (group name patterns) complete AllowUsers; they apply in OpenSSH's
	// order: DenyUsers, AllowUsers, DenyGroups, AllowGroups.
	DenyUsers, AllowGroups, DenyGroups []string

	// SkipShellCheck turns off the check that the login shell exists and
	// is executable (set it where a ChrootDirectory applies).
	SkipShellCheck bool

	// LookupAccount returns the passwd and shadow entries the account
	// policy (lock, expiry, shell, password hash) uses. Nil means the
	// system's files when LookupUser is nil too; with a LookupUser of
	// its own and no LookupAccount, only what LookupUser returns is
	// known (no shadow entry: no lock or expiry checks).
	LookupAccount func(name string) (*account.Account, error)

	// LoginGraceTime bounds a keyboard-interactive conversation (a PAM
	// dialog waiting for the client); 0 means DefaultLoginGraceTime,
	// negative no limit.
	LoginGraceTime time.Duration

	// TimingSecret keys the per-user failure delay; nil means a random
	// one for each connection.
	TimingSecret []byte

	// MaxAuthTries is the number of failed attempts after which the
	// connection is dropped (0 means DefaultMaxAuthTries).
	MaxAuthTries int

	// RequiredRSASize is the smallest RSA key, in bits, accepted for a
	// user key or the CA of a user certificate (0 means MinRSABits;
	// smaller values are raised to it), as OpenSSH's RequiredRSASize.
	RequiredRSASize int

	// Banner, when not empty, is sent as SSH_MSG_USERAUTH_BANNER before
	// the first answer.
	Banner string

	// PermitRootLogin is the policy for uid 0 ("" means prohibit-password).
	PermitRootLogin RootLogin

	// AllowUsers, when not empty, are patterns (* and ?) of the users
	// allowed to log in, each optionally "user@host" where host is
	// matched against the client address (wildcards or CIDR).
	AllowUsers []string

	// OnlyUser, when set, is the only account that may log in. The glue
	// sets it to the running user when the server does not run as root.
	OnlyUser string

	// PermitUserEnvironment passes authorized_keys environment= options
	// on in perm.Permissions.Environment; otherwise they are dropped.
	PermitUserEnvironment bool

	// PublicKeyAlgorithms and CASignatureAlgorithms, when not empty,
	// replace the defaults above.
	PublicKeyAlgorithms   []string
	CASignatureAlgorithms []string

	// IgnoreFileModes turns off the StrictModes checks on authorized_keys
	// and principals files and their directories.
	IgnoreFileModes bool

	// LookupUser resolves account names (nil means os/user.Lookup).
	LookupUser func(name string) (*user.User, error)

	// Logger receives one line per decision (nil means slog.Default()).
	// Passwords and key material are never logged.
	Logger *slog.Logger

	// Now is the clock for expiry-time= and certificate validity (nil
	// means time.Now).
	Now func() time.Time
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	if c.UsePAM && !pam.Available {
		return &ConfigError{"UsePAM", pam.ErrUnavailable.Error()}
	}
	if err := c.validateLists(); err != nil {
		return err
	}
	if err := validateCommand("AuthorizedKeysCommand", c.AuthorizedKeysCommand, c.AuthorizedKeysCommandUser, keysCommandTokens); err != nil {
		return err
	}
	if err := validateCommand("AuthorizedPrincipalsCommand", c.AuthorizedPrincipalsCommand, c.AuthorizedPrincipalsCommandUser, principalsCommandTokens); err != nil {
		return err
	}
	if c.MaxAuthTries < 0 {
		return &ConfigError{"MaxAuthTries", "negative"}
	}
	switch c.PermitRootLogin {
	case "", RootYes, RootNo, RootProhibitPassword, RootForcedCommandsOnly:
	default:
		return &ConfigError{"PermitRootLogin", "unknown value " + string(c.PermitRootLogin)}
	}
	if err := validatePatterns("AuthorizedKeysFiles", c.AuthorizedKeysFiles); err != nil {
		return err
	}
	if err := validatePatterns("AuthorizedPrincipalsFile", []string{c.AuthorizedPrincipalsFile}); err != nil {
		return err
	}
	for _, a := range c.PublicKeyAlgorithms {
		if _, ok := algorithms[a]; !ok {
			return &ConfigError{"PublicKeyAlgorithms", "unknown algorithm " + a}
		}
	}
	for _, a := range c.CASignatureAlgorithms {
		if alg, ok := algorithms[a]; !ok || alg.sigFormat != a {
			return &ConfigError{"CASignatureAlgorithms", "unknown signature algorithm " + a}
		}
	}
	return nil
}

func validatePatterns(field string, patterns []string) error {
	for _, p := range patterns {
		if _, err := expandTokens(p, "h", "u", "0"); err != nil {
			return &ConfigError{field, err.Error()}
		}
	}
	return nil
}

// settings is a Config with defaults filled in.
type settings struct {
	*Config
	keyFiles []string
	maxTries int
	minRSA   int
	root     RootLogin
	keyAlgos []string
	caAlgos  []string
	lookup   func(string) (*user.User, error)
	log      *slog.Logger
	now      func() time.Time
	methods  []string   // the enabled methods, in FAILURE's order
	lists    [][]string // AuthenticationMethods without disabled lists
	grace    time.Duration
}

func newSettings(c *Config) *settings {
	if c == nil {
		c = &Config{}
	}
	s := &settings{Config: c, keyFiles: c.AuthorizedKeysFiles, maxTries: c.MaxAuthTries, minRSA: max(c.RequiredRSASize, MinRSABits),
		root: c.PermitRootLogin, keyAlgos: c.PublicKeyAlgorithms, caAlgos: c.CASignatureAlgorithms,
		lookup: c.LookupUser, log: c.Logger, now: c.Now}
	s.fillDefaults()
	return s
}

func (s *settings) fillDefaults() {
	if s.keyFiles == nil {
		s.keyFiles = []string{DefaultAuthorizedKeysFile}
	}
	if len(s.keyFiles) == 1 && strings.EqualFold(s.keyFiles[0], "none") {
		s.keyFiles = nil
	}
	if s.maxTries == 0 {
		s.maxTries = DefaultMaxAuthTries
	}
	if s.root == "" {
		s.root = RootProhibitPassword
	}
	if len(s.keyAlgos) == 0 {
		s.keyAlgos = DefaultPublicKeyAlgorithms
	}
	if len(s.caAlgos) == 0 {
		s.caAlgos = DefaultCASignatureAlgorithms
	}
	s.fillFuncs()
	s.methods = []string{"publickey"}
	if s.PasswordAuthentication {
		s.methods = append(s.methods, "password")
	}
	if s.KbdInteractiveAuthentication {
		s.methods = append(s.methods, "keyboard-interactive")
	}
	s.lists = s.enabledLists()
	if s.grace = s.LoginGraceTime; s.grace == 0 {
		s.grace = DefaultLoginGraceTime
	}
}

// withGrace bounds ctx by the LoginGraceTime, if there is one.
func (s *settings) withGrace(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.grace < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.grace)
}

func (s *settings) fillFuncs() {
	if s.lookup == nil {
		s.lookup = user.Lookup
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
}

func (s *settings) keyAlgoAllowed(algo string) bool { return slices.Contains(s.keyAlgos, algo) }
func (s *settings) caAlgoAllowed(algo string) bool  { return slices.Contains(s.caAlgos, algo) }
