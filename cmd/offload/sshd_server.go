package main

import (
	"crypto"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/config"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/pam"
	"github.com/offload/offload/sshd/penalty"
	"github.com/offload/offload/sshd/transport"
)

// This file translates a parsed configuration into what the server runs
// with: sshd.Config (serverConfig), and per connection the auth and
// connection settings of its Match blocks (connSettings). Every supported
// keyword of sshd/config's table lands here or in the daemon
// (daemonView); TestNoKeywordIgnored fails for one that lands nowhere.

// maxBannerSize bounds the Banner file, which is sent before login in
// one packet: it leaves room in the 256 KiB packets OpenSSH's clients
// take (a 100,000-byte banner, OpenSSH's regress banner test, is sent).
const maxBannerSize = 192 << 10

// serverConfig translates a parsed configuration into the server's
// Config. Lists not set in the file stay nil so that the server picks its
// defaults (those of CryptoProfile). With Match
// blocks, the server asks PerConnection for each connection's settings
// once its user is known.
func serverConfig(c *config.Config, reg *provider.Registry, keys []crypto.Signer, log *slog.Logger) (*sshd.Config, error) {
	sc, err := buildServerConfig(c, reg, keys, log)
	if err != nil {
		return nil, err
	}
	if c.HasMatch() || c.RefuseConnection {
		match := perConnection(c, sc.Logger)
		sc.PerConnection = func(ci sshd.ConnInfo) (*sshd.ConnSettings, error) {
			a, cc, err := match(connInfo(ci))
			if err != nil || (a == nil && cc == nil) {
				return nil, err
			}
			return &sshd.ConnSettings{Auth: a, Conn: cc}, nil
		}
	}
	return sc, nil
}

// connInfo is what Match is evaluated against for a connection: its
// user (and whether the account exists), addresses and local port. The
// host is the client's address (UseDNS is refused).
func connInfo(ci sshd.ConnInfo) config.ConnInfo {
	out := config.ConnInfo{User: ci.User, InvalidUser: !accountExists(ci.User)}
	if ci.Remote.IsValid() {
		out.Addr = ci.Remote.Addr().String()
		out.Host = out.Addr
	}
	if ci.Local.IsValid() {
		out.LocalAddr, out.LocalPort = ci.Local.Addr().String(), int(ci.Local.Port())
	}
	return out
}

// accountExists reports whether the system knows user; a look-up that
// fails otherwise (or panics on bad NSS data) counts as existing, so
// that Match Invalid-User does not apply on a database error.
func accountExists(name string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = true
		}
	}()
	_, err := user.Lookup(name)
	var unknown user.UnknownUserError
	return !errors.As(err, &unknown)
}

// buildServerConfig is serverConfig without the per-connection hook, for
// -T, which evaluates Match itself.
func buildServerConfig(c *config.Config, reg *provider.Registry, keys []crypto.Signer, log *slog.Logger) (*sshd.Config, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a, cc, err := connSettings(c, log)
	if err != nil {
		return nil, err
	}
	certs, err := hostCertificates(c.HostCertificates)
	if err != nil {
		return nil, err
	}
	sc := &sshd.Config{
		Registry: reg, HostKeys: keys,
		Ciphers: setList(c, "Ciphers", c.Ciphers), MACs: setList(c, "MACs", c.MACs),
		KexAlgorithms: setList(c, "KexAlgorithms", c.KexAlgorithms), HostKeyAlgorithms: setList(c, "HostKeyAlgorithms", c.HostKeyAlgorithms),
		CryptoProfile: transport.Profile(c.CryptoProfile), ModuliFile: c.ModuliFile, HostCertificates: certs,
		CipherSelection: c.CipherSelection, Compression: c.Compression != "no",
		RekeyLimit: uint64(c.RekeyLimit.Bytes), RekeyInterval: c.RekeyLimit.Interval,
		LoginGraceTime: c.LoginGraceTime, MaxStartups: c.MaxStartups.Full,
		DropStartup: func(pending int) bool { return c.MaxStartups.Drop(pending, nil) },
		Version:     versionString(c.VersionAddendum),
		Auth:        a, Conn: cc, Logger: log,
	}
	if c.LoginGraceTime == 0 {
		sc.LoginGraceTime = -1 // sshd_config: 0 means no limit
	}
	if c.PrivilegeSeparation {
		sc.Separation = &sshd.Separation{Workers: c.PreauthWorkers, PerConnection: c.PostauthPerConnection}
	}
	var err2 error
	sc.Penalties, err2 = penalties(c, log)
	return sc, err2
}

// penalties is the per-source tracker of PerSourcePenalties,
// PerSourceMaxStartups, PerSourceNetBlockSize and
// PerSourcePenaltyExemptList; nil when penalties are off and there is no
// per-source startup limit.
func penalties(c *config.Config, log *slog.Logger) (*penalty.Tracker, error) {
	pc, err := penalty.ParsePenalties(penalty.Defaults(), c.PerSourcePenalties)
	if err != nil {
		return nil, err
	}
	pc.Bits4, pc.Bits6 = c.PerSourceNetBlockSize[0], c.PerSourceNetBlockSize[1]
	pc.MaxStartups = c.PerSourceMaxStartups
	if c.PerSourcePenaltyExemptList != "" {
		pc.Exempt = strings.Split(c.PerSourcePenaltyExemptList, ",")
	}
	if pc.Disabled && pc.MaxStartups == 0 {
		return nil, nil
	}
	return penalty.New(&pc, log, nil)
}

// versionString is the identification string with VersionAddendum.
func versionString(addendum string) string {
	if addendum == "" {
		return ""
	}
	return transport.DefaultVersion + " " + addendum
}

func setList(c *config.Config, keyword string, v []string) []string {
	if c.IsSet(keyword) {
		return v
	}
	return nil
}

// connSettings translates the keywords that may differ per connection
// (those a Match block may set) into the auth and connection settings.
func connSettings(c *config.Config, log *slog.Logger) (*auth.Config, *connection.Config, error) {
	a, err := authConfig(c, log)
	if err != nil {
		return nil, nil, err
	}
	return a, connectionConfig(c, log), nil
}

// perConnection returns what the server needs once a connection's user
// is known: the auth and connection settings of the Match blocks that
// match it, or nil, nil (the server-wide ones) when none does.
// serverConfig hands it to the server as sshd.Config.PerConnection.
func perConnection(c *config.Config, log *slog.Logger) func(config.ConnInfo) (*auth.Config, *connection.Config, error) {
	return func(ci config.ConnInfo) (*auth.Config, *connection.Config, error) {
		if ci.Host == "" {
			ci.Host = ci.Addr // UseDNS no: the host is the address
		}
		eff, err := c.ForConnection(ci)
		if err != nil {
			log.Warn("Match evaluation failed; the lines needing it do not apply", "user", ci.User, "err", err)
		}
		if eff.RefuseConnection {
			return nil, nil, fmt.Errorf("RefuseConnection: connection from %s: %w", ci.Addr, sshd.ErrRefuseConnection)
		}
		if eff == c {
			return nil, nil, nil
		}
		if eff.LogLevel != c.LogLevel {
			log = withLevel(log, eff.SlogLevel()) // LogLevel in a Match block
		}
		return connSettings(eff, log)
	}
}

func authConfig(c *config.Config, log *slog.Logger) (*auth.Config, error) {
	if !c.PubkeyAuthentication {
		log.Warn("PubkeyAuthentication no leaves no authentication method: nobody can log in")
	}
	a := &auth.Config{
		AuthorizedKeysFiles: c.AuthorizedKeysFile,
		TrustedUserCAKeys:   c.TrustedUserCAKeys,
		RevokedKeys:         c.RevokedKeys,
		MaxAuthTries:        c.MaxAuthTries,
		RequiredRSASize:     c.RequiredRSASize,
		PermitRootLogin:     auth.RootLogin(c.PermitRootLogin),
		AllowUsers:          c.AllowUsers,
		IgnoreFileModes:     !c.StrictModes,

		PasswordAuthentication:       c.PasswordAuthentication, // PAM with UsePAM, else the shadow database
		KbdInteractiveAuthentication: c.KbdInteractiveAuthentication,
		PermitEmptyPasswords:         c.PermitEmptyPasswords,
		UsePAM:                       c.UsePAM,
		PAM:                          pam.Config{Service: c.PAMServiceName},
		AuthenticationMethods:        authMethods(c.AuthenticationMethods),
		DenyUsers:                    c.DenyUsers,
		AllowGroups:                  c.AllowGroups,
		DenyGroups:                   c.DenyGroups,

		AuthorizedKeysCommand:           c.AuthorizedKeysCommand,
		AuthorizedKeysCommandUser:       c.AuthorizedKeysCommandUser,
		AuthorizedPrincipalsCommand:     c.AuthorizedPrincipalsCommand,
		AuthorizedPrincipalsCommandUser: c.AuthorizedPrincipalsCommandUser,

		AuthorizedPrincipalsFile: c.AuthorizedPrincipalsFile,
		PermitUserEnvironment:    c.PermitUserEnvironment,
		PublicKeyAlgorithms:      setList(c, "PubkeyAcceptedAlgorithms", c.PubkeyAcceptedAlgorithms),
		CASignatureAlgorithms:    setList(c, "CASignatureAlgorithms", c.CASignatureAlgorithms),
		Logger:                   log,
	}
	if len(a.AuthorizedKeysFiles) == 0 {
		a.AuthorizedKeysFiles = []string{"none"}
	}
	if !c.PubkeyAuthentication {
		a.AuthorizedKeysFiles, a.TrustedUserCAKeys = []string{"none"}, ""
	}
	if c.Banner != "" {
		b, err := readBanner(c.Banner)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// as sshd: a missing banner file means no banner
			log.Debug("Banner file missing: no banner is sent", "file", c.Banner)
		case err != nil:
			return nil, err
		}
		a.Banner = b
	}
	return a, a.Validate()
}

// authMethods splits AuthenticationMethods' lists ("publickey,password")
// into their methods; none means any single method.
func authMethods(lists []string) [][]string {
	var out [][]string
	for _, l := range lists {
		out = append(out, strings.Split(l, ","))
	}
	return out
}

func readBanner(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("Banner: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBannerSize+1))
	if err != nil {
		return "", fmt.Errorf("Banner: %w", err)
	}
	if len(b) > maxBannerSize {
		return "", fmt.Errorf("Banner %s: larger than %d bytes", path, maxBannerSize)
	}
	return string(b), nil
}

// connectionConfig translates the connection-layer keywords.
func connectionConfig(c *config.Config, log *slog.Logger) *connection.Config {
	fwd, _ := connection.ParseTCPForwarding(c.AllowTCPForwarding) // checked by the parser
	cc := &connection.Config{
		WindowSize:          uint32(min(c.ChannelWindowSize, 1<<31-1)),
		MaxSessions:         c.MaxSessions,
		AcceptEnv:           c.AcceptEnv,
		AllowTCPForwarding:  fwd,
		Subsystems:          map[string]string{},
		ClientAliveInterval: c.ClientAliveInterval,
		ClientAliveCountMax: c.ClientAliveCountMax,
		NoLastLog:           !c.PrintLastLog,
		ChrootDirectory:     c.ChrootDirectory,
		Logger:              log,
	}
	if c.MaxSessions == 0 {
		cc.MaxSessions = -1 // sshd_config: 0 means no sessions
	}
	if c.ClientAliveCountMax == 0 {
		cc.ClientAliveCountMax = -1 // sshd_config: 0 means never disconnect
	}
	interactive, _ := config.TOS(c.IPQoS[0]) // checked by the parser
	bulk, _ := config.TOS(c.IPQoS[1])
	cc.IPQoS = &connection.QoS{Interactive: interactive, Bulk: bulk}
	if exe, err := os.Executable(); err == nil {
		cc.SFTPHelper = []string{exe, "sftp-server"} // internal-sftp as another user (cmdSFTPServer)
	}
	for _, s := range c.Subsystems {
		cc.Subsystems[s.Name] = s.Command
	}
	sessionSettings(c, cc)
	forwardSettings(c, cc)
	x11Settings(c, cc)
	if c.DisableForwarding {
		disableForwarding(cc)
	}
	return cc
}

// sessionSettings translates the keywords of sessions: ForceCommand,
// PermitTTY, PermitUserRC, PrintMotd, SetEnv, ExposeAuthInfo, PermitUserEnvironment
// (~/.ssh/environment; auth passes environment= options, which the
// connection layer filters by the same patterns), ChannelTimeout and
// UnusedConnectionTimeout.
func sessionSettings(c *config.Config, cc *connection.Config) {
	cc.ForceCommand = c.ForceCommand
	cc.NoTTY, cc.NoUserRC, cc.NoMotd = !c.PermitTTY, !c.PermitUserRC, !c.PrintMotd
	cc.Nologin = !c.UsePAM // with PAM, pam_nologin decides at login
	cc.SetEnv = c.SetEnv
	cc.ExposeAuthInfo = c.ExposeAuthInfo
	switch {
	case c.PermitUserEnvironmentList != nil:
		cc.PermitUserEnvironment = c.PermitUserEnvironmentList
	case c.PermitUserEnvironment:
		cc.PermitUserEnvironment = []string{"*"}
	}
	cc.ChannelTimeouts = channelTimeouts(c.ChannelTimeout)
	cc.UnusedConnectionTimeout = c.UnusedConnectionTimeout
}

// channelTimeouts splits ChannelTimeout's type=interval entries (checked
// by the parser).
func channelTimeouts(entries []string) []connection.ChannelTimeout {
	var out []connection.ChannelTimeout
	for _, e := range entries {
		typ, iv, _ := strings.Cut(e, "=")
		d, _ := config.ParseTime(iv)
		out = append(out, connection.ChannelTimeout{Type: typ, Timeout: d})
	}
	return out
}

// forwardSettings translates the forwarding keywords other than
// AllowTcpForwarding and DisableForwarding.
func forwardSettings(c *config.Config, cc *connection.Config) {
	cc.AllowStreamLocalForwarding, _ = connection.ParseTCPForwarding(c.AllowStreamLocalForwarding) // checked by the parser
	cc.GatewayPorts, _ = connection.ParseGatewayPorts(c.GatewayPorts)
	cc.PermitOpen, cc.PermitListen = c.PermitOpen, c.PermitListen
	mask := fs.FileMode(c.StreamLocalBindMask)
	cc.StreamLocalBindMask = &mask
	cc.StreamLocalBindUnlink = c.StreamLocalBindUnlink
	cc.NoAgentForwarding = !c.AllowAgentForwarding
}

// x11Settings translates X11Forwarding, X11DisplayOffset, X11UseLocalhost
// and XAuthLocation.
func x11Settings(c *config.Config, cc *connection.Config) {
	off := c.X11DisplayOffset
	cc.X11Forwarding, cc.X11DisplayOffset, cc.X11NoLocalhost = c.X11Forwarding, &off, !c.X11UseLocalhost
	cc.XAuthLocation = c.XAuthLocation
}

// disableForwarding turns off every kind of forwarding the connection
// layer has (DisableForwarding yes): TCP, Unix sockets, agent and X11. A
// forwarding kind added to connection.Config must be turned off here too.
func disableForwarding(cc *connection.Config) {
	cc.AllowTCPForwarding, cc.AllowStreamLocalForwarding = connection.ForwardNone, connection.ForwardNone
	cc.NoAgentForwarding, cc.X11Forwarding = true, false
	cc.DisableForwarding = true // the connection layer's own switch for all of them
}

// daemonView is what the daemon takes from a configuration itself, as it
// takes it: listeners, pid file, logging, TCP keepalive, host keys, the
// registry's policy, PKCS #11 and calibration settings, metrics. Tests
// compare it, with the server's Config, to see that a keyword is applied.
type daemonView struct {
	Listen           []string
	PidFile          string
	LogLevel         slog.Level
	Syslog           string
	TCPKeepAlive     bool
	HostKeys         []string
	HostKeyAgent     string // openHostKeys: the agent of public HostKey files
	Policy           string
	PKCS11Module     string
	PKCS11Tokens     []string
	PKCS11PinSource  string
	PKCS11Env        []string
	PKCS11StateDir   string
	CalibrationCache string
	Metrics          string
}

func daemonViewOf(c *config.Config) daemonView {
	tokens, _ := pkcs11Tokens(c)
	var toks []string
	for _, t := range tokens {
		toks = append(toks, t.String())
	}
	return daemonView{
		Listen: listenKeys(c), PidFile: c.PidFile, LogLevel: c.SlogLevel(), Syslog: syslogFacility(c),
		TCPKeepAlive: c.TCPKeepAlive, HostKeys: c.HostKeys, HostKeyAgent: c.HostKeyAgent, Policy: c.Policy().String(),
		PKCS11Module: c.PKCS11Module, PKCS11Tokens: toks, PKCS11PinSource: c.PKCS11PinSource,
		PKCS11Env: c.PKCS11Env, PKCS11StateDir: pinStateDir(c),
		CalibrationCache: c.CalibrationCache, Metrics: c.MetricsAddress,
	}
}

// syslogFacility is the facility logs go to syslog with, or "" when they
// go to stderr: SyslogFacility given in the configuration sends them to
// syslog, as sshd does (offload's default, without it, is stderr, which
// systemd puts in the journal).
func syslogFacility(c *config.Config) string {
	if c == nil || !c.IsSet("SyslogFacility") {
		return ""
	}
	return strings.ToUpper(c.SyslogFacility)
}

// hostCertificates reads HostCertificate files: each an OpenSSH host
// certificate (ssh-keygen -h -s ...) of one of the host keys, whose
// private key may live in a token.
func hostCertificates(paths []string) ([]*ssh.Certificate, error) {
	var out []*ssh.Certificate
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("HostCertificate: %w", err)
		}
		pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			return nil, fmt.Errorf("HostCertificate %s: %w", p, err)
		}
		cert, ok := pub.(*ssh.Certificate)
		if !ok || cert.CertType != ssh.HostCert {
			return nil, fmt.Errorf("HostCertificate %s: not a host certificate", p)
		}
		out = append(out, cert)
	}
	return out, nil
}
