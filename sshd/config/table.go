package config

import (
	"time"

	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/transport"
)

// The keyword table: every keyword of OpenSSH 10's sshd_config(5) (and
// Debian's additions), then offload's own. The order is the order of
// sshd -T, which Print follows.
//
// Each entry says what offload does with the keyword (Status):
//
//   - supported("where"): implemented; "where" names the field it lands
//     in (sshd.Config, auth.Config, connection.Config, or the daemon).
//     cmd/offload's TestNoKeywordIgnored sets every supported keyword to
//     its example (.eg) value and fails unless the settings handed to the
//     server change, so a keyword nothing applies cannot be supported.
//   - refused(owner, what, accepted): not implemented; any value but
//     accepted fails -t with ErrNotImplemented.
//   - inert(while, what): only configures the feature of the refused
//     keyword while, so it has no effect, as in OpenSSH with it off.
//   - deprecated / unsupported: warned about and ignored, as OpenSSH does.
//
// .match() marks keywords OpenSSH allows inside Match; .perConnection()
// those offload also applies per connection (the others are refused
// inside Match).
//
// # Implementing a refused keyword
//
// Flip its entry from .refused(...) to .supported("pkg.Config.Field")
// (and .match() to .perConnection() when it may vary per connection),
// then apply the field in cmd/offload/sshd_server.go (authConfig,
// connectionConfig or serverConfig). The example value must then change
// what serverConfig (or, in a Match block, the per-connection settings)
// returns, or TestNoKeywordIgnored fails. Regenerate the reference table
// with `go generate ./sshd/config` (docs/configuration.md; a test keeps it
// equal to this table).
var keywords = []*keyword{
	accInts("Port", maxPorts, DefaultPort, func(c *Config) *[]int { return &c.Ports }).
		supported("daemon: listeners").eg("2222"),
	enumKW("AddressFamily", "any", func(c *Config) *string { return &c.AddressFamily }, []string{"any", "inet", "inet6"}, nil).
		supported("daemon: listeners").eg("inet"),
	listenKW().supported("daemon: listeners").eg("127.0.0.1:2200"),
	boolKW("UsePAM", false, func(c *Config) *bool { return &c.UsePAM }).
		supported("auth.Config.UsePAM").eg("yes"),
	stringKW("PAMServiceName", "sshd", func(c *Config) *string { return &c.PAMServiceName }).perConnection().
		supported("auth.Config.PAM.Service").eg("login"),
	timeKW("LoginGraceTime", auth.DefaultLoginGraceTime, false, func(c *Config) *time.Duration { return &c.LoginGraceTime }).
		supported("sshd.Config.LoginGraceTime").eg("30"),
	intKW("X11DisplayOffset", 0, 1000, connection.DefaultX11DisplayOffset, func(c *Config) *int { return &c.X11DisplayOffset }).perConnection().
		supported("connection.Config.X11DisplayOffset").eg("20"),
	intKW("MaxAuthTries", 1, 1000, auth.DefaultMaxAuthTries, func(c *Config) *int { return &c.MaxAuthTries }).perConnection().
		supported("auth.Config.MaxAuthTries").eg("3"),
	intKW("MaxSessions", 0, 10000, connection.DefaultMaxSessions, func(c *Config) *int { return &c.MaxSessions }).perConnection().
		supported("connection.Config.MaxSessions").eg("4"),
	timeKW("ClientAliveInterval", 0, false, func(c *Config) *time.Duration { return &c.ClientAliveInterval }).perConnection().
		supported("connection.Config.ClientAliveInterval").eg("15"),
	intKW("ClientAliveCountMax", 0, 1000, connection.DefaultClientAliveCountMax, func(c *Config) *int { return &c.ClientAliveCountMax }).perConnection().
		supported("connection.Config.ClientAliveCountMax").eg("5"),
	intKW("RequiredRSASize", 1024, 16384, 1024, func(c *Config) *int { return &c.RequiredRSASize }).perConnection().
		supported("auth.Config.RequiredRSASize").eg("3072"),
	octalKW("StreamLocalBindMask", 0o177, func(c *Config) *uint32 { return &c.StreamLocalBindMask }).perConnection().
		supported("connection.Config.StreamLocalBindMask").eg("0117"),
	timeKW("UnusedConnectionTimeout", 0, true, func(c *Config) *time.Duration { return &c.UnusedConnectionTimeout }).perConnection().
		supported("connection.Config.UnusedConnectionTimeout").eg("5m"),
	enumKW("PermitRootLogin", DefaultPermitRootLogin, func(c *Config) *string { return &c.PermitRootLogin },
		[]string{"yes", "prohibit-password", "forced-commands-only", "no"}, map[string]string{"without-password": "prohibit-password"}).
		perConnection().supported("auth.Config.PermitRootLogin").eg("no"),
	enumKW("IgnoreRhosts", "yes", func(c *Config) *string { return &c.IgnoreRhosts }, []string{"yes", "no", "shosts-only"}, nil).match().
		inert("HostbasedAuthentication", ".rhosts and .shosts files").eg("no"),
	boolKW("IgnoreUserKnownHosts", false, func(c *Config) *bool { return &c.IgnoreUserKnownHosts }).
		inert("HostbasedAuthentication", "~/.ssh/known_hosts for host-based authentication").eg("yes"),
	boolKW("HostbasedAuthentication", false, func(c *Config) *bool { return &c.HostbasedAuthentication }).match().
		refused("auth", "host-based authentication", "no").eg("yes"),
	boolKW("HostbasedUsesNameFromPacketOnly", false, func(c *Config) *bool { return &c.HostbasedUsesNameFromPacketOnly }).match().
		inert("HostbasedAuthentication", "host names in host-based authentication").eg("yes"),
	boolKW("PubkeyAuthentication", true, func(c *Config) *bool { return &c.PubkeyAuthentication }).perConnection().
		supported("auth.Config.AuthorizedKeysFiles, TrustedUserCAKeys (no: none)").eg("no"),
	// Passwords are on by default, as in OpenSSH: Debian's stock file
	// relies on it (UsePAM yes, KbdInteractiveAuthentication no, no
	// PasswordAuthentication line). keyboard-interactive stays off unless
	// asked for: without PAM offload's would ask for the password, where
	// OpenSSH's (no BSD auth, no S/Key on Linux) has nothing to ask.
	boolKW("PasswordAuthentication", true, func(c *Config) *bool { return &c.PasswordAuthentication }).perConnection().
		supported("auth.Config.PasswordAuthentication").eg("no"),
	boolKW("KbdInteractiveAuthentication", false, func(c *Config) *bool { return &c.KbdInteractiveAuthentication }).perConnection().
		supported("auth.Config.KbdInteractiveAuthentication").eg("yes"),
	boolKW("PrintMotd", true, func(c *Config) *bool { return &c.PrintMotd }).
		supported("connection.Config.NoMotd (no)").eg("no"),
	boolKW("PrintLastLog", true, func(c *Config) *bool { return &c.PrintLastLog }).
		supported("connection.Config.NoLastLog (the records are the monitor's)").eg("no"),
	boolKW("X11Forwarding", false, func(c *Config) *bool { return &c.X11Forwarding }).perConnection().
		supported("connection.Config.X11Forwarding").eg("yes"),
	boolKW("X11UseLocalhost", true, func(c *Config) *bool { return &c.X11UseLocalhost }).perConnection().
		supported("connection.Config.X11NoLocalhost (no)").eg("no"),
	boolKW("PermitTTY", true, func(c *Config) *bool { return &c.PermitTTY }).perConnection().
		supported("connection.Config.NoTTY (no)").eg("no"),
	boolKW("PermitUserRC", true, func(c *Config) *bool { return &c.PermitUserRC }).perConnection().
		supported("connection.Config.NoUserRC (no)").eg("no"),
	boolKW("StrictModes", true, func(c *Config) *bool { return &c.StrictModes }).
		supported("auth.Config.IgnoreFileModes").eg("no"),
	boolKW("TCPKeepAlive", true, func(c *Config) *bool { return &c.TCPKeepAlive }).
		supported("daemon: SO_KEEPALIVE on accepted connections, system timing; kept when the socket passes between processes (rawio.FileConn)").eg("no"),
	boolKW("PermitEmptyPasswords", false, func(c *Config) *bool { return &c.PermitEmptyPasswords }).perConnection().
		supported("auth.Config.PermitEmptyPasswords").eg("yes"),
	// delayed is OpenSSH's legacy synonym of yes; -T prints yes for both.
	enumKW("Compression", "yes", func(c *Config) *string { return &c.Compression }, []string{"yes", "no"}, map[string]string{"delayed": "yes"}).
		supported("sshd.Config.Compression: zlib@openssh.com after user authentication").eg("no"),
	enumKW("GatewayPorts", "no", func(c *Config) *string { return &c.GatewayPorts }, []string{"no", "yes", "clientspecified"}, nil).perConnection().
		supported("connection.Config.GatewayPorts").eg("clientspecified"),
	boolKW("UseDNS", false, func(c *Config) *bool { return &c.UseDNS }).
		refused("config", "reverse DNS look-ups of clients", "no").eg("yes"),
	enumKW("AllowTcpForwarding", DefaultAllowTCPForwarding, func(c *Config) *string { return &c.AllowTCPForwarding },
		[]string{"yes", "all", "no", "local", "remote"}, nil).perConnection().
		supported("connection.Config.AllowTCPForwarding").eg("no"),
	boolKW("AllowAgentForwarding", true, func(c *Config) *bool { return &c.AllowAgentForwarding }).perConnection().
		supported("connection.Config.NoAgentForwarding (no)").eg("no"),
	boolKW("DisableForwarding", false, func(c *Config) *bool { return &c.DisableForwarding }).perConnection().
		supported("connection.Config: every forwarding kind off").eg("yes"),
	enumKW("AllowStreamLocalForwarding", "yes", func(c *Config) *string { return &c.AllowStreamLocalForwarding },
		[]string{"yes", "all", "no", "local", "remote"}, nil).perConnection().
		supported("connection.Config.AllowStreamLocalForwarding").eg("no"),
	boolKW("StreamLocalBindUnlink", false, func(c *Config) *bool { return &c.StreamLocalBindUnlink }).perConnection().
		supported("connection.Config.StreamLocalBindUnlink").eg("yes"),
	enumKW("FingerprintHash", "SHA256", func(c *Config) *string { return &c.FingerprintHash }, []string{"SHA256", "MD5"}, nil).
		refused("auth", "MD5 fingerprints in logs", "SHA256").eg("md5"),
	boolKW("ExposeAuthInfo", false, func(c *Config) *bool { return &c.ExposeAuthInfo }).perConnection().
		supported("connection.Config.ExposeAuthInfo: SSH_USER_AUTH names a file of the user's with the methods that succeeded, removed when the connection ends").eg("yes"),
	boolKW("RefuseConnection", false, func(c *Config) *bool { return &c.RefuseConnection }).perConnection().
		supported("sshd.Config.PerConnection: an error, which refuses the connection once its user is known").eg("yes"),
	pathKW("PidFile", func(c *Config) *string { return &c.PidFile }).
		supported("daemon: pid file").eg("/run/offload-test.pid"),
	stringKW("ModuliFile", "/etc/ssh/moduli", func(c *Config) *string { return &c.ModuliFile }).
		supported("sshd.Config.ModuliFile: the groups of diffie-hellman-group-exchange-sha256").eg("/etc/ssh/moduli.safe"),
	xauthKW().supported("connection.Config.XAuthLocation (none: X11 forwarding refused)").eg("/opt/bin/xauth"),
	algKW("Ciphers", CipherList, func(c *Config) *[]string { return &c.Ciphers }).
		supported("sshd.Config.Ciphers").eg("aes256-gcm@openssh.com"),
	algKW("MACs", MACList, func(c *Config) *[]string { return &c.MACs }).
		supported("sshd.Config.MACs").eg("hmac-sha2-512-etm@openssh.com"),
	pathKW("Banner", func(c *Config) *string { return &c.Banner }).perConnection().
		supported("auth.Config.Banner (the file's text)").eg("/etc/issue.net"),
	forceCommandKW().perConnection().supported("connection.Config.ForceCommand").eg("/usr/bin/true"),
	pathKW("ChrootDirectory", func(c *Config) *string { return &c.ChrootDirectory }).perConnection().
		supported("connection.Config.ChrootDirectory (the post-auth process is confined there)").eg("/srv/chroot/%u"),
	pathKW("TrustedUserCAKeys", func(c *Config) *string { return &c.TrustedUserCAKeys }).perConnection().
		supported("auth.Config.TrustedUserCAKeys").eg("/etc/ssh/user_ca.pub"),
	pathKW("RevokedKeys", func(c *Config) *string { return &c.RevokedKeys }).perConnection().
		supported("auth.Config.RevokedKeys").eg("/etc/ssh/revoked_keys"),
	stringKW("SecurityKeyProvider", "internal", func(c *Config) *string { return &c.SecurityKeyProvider }).
		inertUnless(func() bool { return true }, "FIDO security-key host keys: the value is kept and printed, and a sk-* HostKey is logged and skipped as one sshd cannot load").eg("/usr/lib/libsk.so"),
	pathKW("AuthorizedPrincipalsFile", func(c *Config) *string { return &c.AuthorizedPrincipalsFile }).perConnection().
		supported("auth.Config.AuthorizedPrincipalsFile").eg("/etc/ssh/principals/%u"),
	commandKW("VersionAddendum", false, func(c *Config) *string { return &c.VersionAddendum }).
		supported("sshd.Config.Version").eg("hello"),
	commandKW("AuthorizedKeysCommand", true, func(c *Config) *string { return &c.AuthorizedKeysCommand }).perConnection().
		supported("auth.Config.AuthorizedKeysCommand").eg("/usr/bin/keys %u"),
	localUserKW("AuthorizedKeysCommandUser", func(c *Config) *string { return &c.AuthorizedKeysCommandUser }).perConnection().
		supported("auth.Config.AuthorizedKeysCommandUser").eg("nobody"),
	commandKW("AuthorizedPrincipalsCommand", true, func(c *Config) *string { return &c.AuthorizedPrincipalsCommand }).perConnection().
		supported("auth.Config.AuthorizedPrincipalsCommand").eg("/usr/bin/principals %u"),
	localUserKW("AuthorizedPrincipalsCommandUser", func(c *Config) *string { return &c.AuthorizedPrincipalsCommandUser }).perConnection().
		supported("auth.Config.AuthorizedPrincipalsCommandUser").eg("nobody"),
	pathKW("HostKeyAgent", func(c *Config) *string { return &c.HostKeyAgent }).
		supported("daemon: a HostKey the registry cannot open is a public key file, signed with by this ssh-agent (SSH_AUTH_SOCK: the environment's)").eg("/run/agent.sock"),
	algKW("KexAlgorithms", KexList, func(c *Config) *[]string { return &c.KexAlgorithms }).
		supported("sshd.Config.KexAlgorithms").eg("curve25519-sha256"),
	algKW("CASignatureAlgorithms", CASigList, func(c *Config) *[]string { return &c.CASignatureAlgorithms }).perConnection().
		supported("auth.Config.CASignatureAlgorithms").eg("ssh-ed25519"),
	algKW("HostbasedAcceptedAlgorithms", HostbasedList, func(c *Config) *[]string { return &c.HostbasedAcceptedAlgorithms }).match().
		inert("HostbasedAuthentication", "the key types of host-based authentication").eg("ssh-ed25519"),
	algKW("HostKeyAlgorithms", HostKeyAlgList, func(c *Config) *[]string { return &c.HostKeyAlgorithms }).
		supported("sshd.Config.HostKeyAlgorithms").eg("ssh-ed25519"),
	algKW("PubkeyAcceptedAlgorithms", PubkeyList, func(c *Config) *[]string { return &c.PubkeyAcceptedAlgorithms }).perConnection().
		supported("auth.Config.PublicKeyAlgorithms").eg("ssh-ed25519"),
	pathKW("RDomain", func(c *Config) *string { return &c.RDomain }).match().
		refused("", "routing domains (VRF)", "none").eg("vrf-blue"),
	stringKW("SshdSessionPath", "/usr/lib/openssh/sshd-session", func(c *Config) *string { return &c.SshdSessionPath }).hidden().
		refused("", "a separate sshd-session program (offload runs its own processes)", "").eg("/usr/libexec/sshd-session"),
	stringKW("SshdAuthPath", "/usr/lib/openssh/sshd-auth", func(c *Config) *string { return &c.SshdAuthPath }).hidden().
		refused("", "a separate sshd-auth program (offload runs its own processes)", "").eg("/usr/libexec/sshd-auth"),
	addrListKW("PerSourcePenaltyExemptList", func(c *Config) *string { return &c.PerSourcePenaltyExemptList }).
		supported("sshd.Config.Penalties (penalty.Config.Exempt)").eg("10.0.0.0/8"),
	logLevelKW().perConnection().supported("the daemon's log level; per connection the auth and connection loggers").eg("DEBUG2"),
	facilityKW().supported("daemon: logs go to syslog with this facility").eg("LOCAL3"),
	authorizedKeysKW().perConnection().supported("auth.Config.AuthorizedKeysFiles").eg(".ssh/offload_keys"),
	hostKeyKW().supported("daemon: host keys opened through the registry").eg("/etc/ssh/ssh_host_test_key"),
	listKW("HostCertificate", "file name", func(c *Config) *[]string { return &c.HostCertificates }, nonEmpty).
		supported("sshd.Config.HostCertificates: offered with their -cert-v01 algorithms").eg("/etc/ssh/ssh_host_ed25519_key-cert.pub"),
	listKW("AllowUsers", "user pattern", func(c *Config) *[]string { return &c.AllowUsers }, checkUserPattern).perConnection().
		supported("auth.Config.AllowUsers").eg("alice"),
	listKW("DenyUsers", "user pattern", func(c *Config) *[]string { return &c.DenyUsers }, checkUserPattern).perConnection().
		supported("auth.Config.DenyUsers").eg("mallory"),
	listKW("AllowGroups", "group pattern", func(c *Config) *[]string { return &c.AllowGroups }, nonEmpty).perConnection().
		supported("auth.Config.AllowGroups").eg("wheel"),
	listKW("DenyGroups", "group pattern", func(c *Config) *[]string { return &c.DenyGroups }, nonEmpty).perConnection().
		supported("auth.Config.DenyGroups").eg("nologin"),
	listKW("AcceptEnv", "variable pattern", func(c *Config) *[]string { return &c.AcceptEnv }, checkEnvName).perConnection().
		supported("connection.Config.AcceptEnv").eg("LANG"),
	setEnvKW().perConnection().supported("connection.Config.SetEnv").eg("FOO=bar"),
	wordsKW("AuthenticationMethods", "any", func(c *Config) *[]string { return &c.AuthenticationMethods }, checkAuthMethods).perConnection().
		supported("auth.Config.AuthenticationMethods").eg("publickey,password"),
	wordsKW("LogVerbose", "", func(c *Config) *[]string { return &c.LogVerbose }, checkLogVerbose).match().
		refused("", "LogVerbose", "").eg("kex.c:*:1000"),
	wordsKW("ChannelTimeout", "none", func(c *Config) *[]string { return &c.ChannelTimeout }, checkChannelTimeout).perConnection().
		supported("connection.Config.ChannelTimeouts").eg("session=5m"),
	subsystemKW().perConnection().supported("connection.Config.Subsystems").eg("backup /usr/bin/backup"),
	maxStartupsKW().supported("sshd.Config.MaxStartups, DropStartup").eg("5:50:20"),
	perSourceMaxKW().supported("sshd.Config.Penalties (penalty.Config.MaxStartups)").eg("3"),
	netBlockKW().supported("sshd.Config.Penalties (penalty.Config.Bits4, Bits6)").eg("24:64"),
	enumKW("PermitTunnel", "no", func(c *Config) *string { return &c.PermitTunnel },
		[]string{"yes", "point-to-point", "ethernet", "no"}, nil).match().
		refused("", "tun device forwarding", "no").eg("yes"),
	ipqosKW().perConnection().supported("connection.Config.IPQoS").eg("lowdelay throughput"),
	rekeyKW().match().supported("sshd.Config.RekeyLimit, RekeyInterval").eg("1G 1h"),
	permitKW("PermitOpen", func(c *Config) *[]string { return &c.PermitOpen }, false).perConnection().
		supported("connection.Config.PermitOpen").eg("localhost:80"),
	permitKW("PermitListen", func(c *Config) *[]string { return &c.PermitListen }, true).perConnection().
		supported("connection.Config.PermitListen").eg("8080"),
	userEnvKW().supported("auth.Config.PermitUserEnvironment, connection.Config.PermitUserEnvironment").eg("LANG,LC_*"),
	wordsKW("PubkeyAuthOptions", "none", func(c *Config) *[]string { return &c.PubkeyAuthOptions }, checkPubkeyAuthOptions).match().
		refused("auth", "PubkeyAuthOptions", "none").eg("verify-required"),
	penaltiesKW().supported("sshd.Config.Penalties").eg("crash:2m"),

	// Not printed by sshd -T.
	includeKW(), matchKW(),
	boolKW("DebianBanner", false, func(c *Config) *bool { return &c.DebianBanner }).hidden().debianOnly().
		refused("", "a distribution suffix in the version string", "no").eg("yes"),
	deprecated("PAMAuthenticationViaKbdInt"), deprecated("ServerKeyBits"), deprecated("KeyRegenerationInterval"),
	deprecated("RhostsAuthentication"), deprecated("RhostsRSAAuthentication").match(), deprecated("RSAAuthentication").match(),
	deprecated("CheckMail"), deprecated("UseLogin"), deprecated("VerifyReverseMapping"), deprecated("ReverseMappingCheck"),
	deprecated("AuthorizedKeysFile2").match(), deprecated("UsePrivilegeSeparation"),
	deprecated("KerberosTgtPassing"), deprecated("AFSTokenPassing"), noted("Protocol", Deprecated, false),
	unsupported("KerberosAuthentication").match(), unsupported("KerberosOrLocalPasswd"), unsupported("KerberosTicketCleanup"),
	unsupported("KerberosGetAFSToken"), unsupported("GSSAPIAuthentication").match(), unsupported("GSSAPICleanupCredentials"),
	unsupported("GSSAPIDelegateCredentials"), unsupported("GSSAPIStrictAcceptorCheck"),
	unsupported("GSSAPIKeyExchange").debianOnly(), unsupported("GSSAPIStoreCredentialsOnRekey").debianOnly(),
	unsupported("GSSAPIKexAlgorithms").debianOnly(), unsupported("GSSAPICleanupCreds").debianOnly(),
	unsupported("GSSAPIUseSessionCredCache").debianOnly(), unsupported("GSSUseSessionCCache").debianOnly(),
	deprecated("PermitBlacklistedKeys").debianOnly(),

	// offload's own.
	channelWindowKW().perConnection().own().supported("connection.Config.WindowSize").eg("32M"),
	metricsKW().own().supported("daemon: /metrics listener").eg("127.0.0.1:9100"),
	pathKW("PKCS11Module", func(c *Config) *string { return &c.PKCS11Module }).
		own().supported("daemon: the PKCS #11 provider's module").eg("/usr/lib/softhsm/libsofthsm2.so"),
	pkcs11TokenKW().own().supported("daemon: the tokens the PKCS #11 provider opens").eg("pkcs11:token=offload"),
	pathKW("PKCS11PinSource", func(c *Config) *string { return &c.PKCS11PinSource }).
		own().supported("daemon: the PKCS #11 provider's PIN").eg("/etc/offload/pin"),
	pkcs11EnvKW().own().supported("daemon: the PKCS #11 module's environment").eg("SOFTHSM2_CONF=/etc/softhsm/softhsm2.conf"),
	pkcs11StateDirKW().own().supported("daemon: where refused PINs are recorded").eg("/srv/offload/state"),
	cryptoPolicyKW().own().supported("daemon: registry policy mode").eg("software-only"),
	enumKW("CryptoProfile", string(transport.ProfileDefault), func(c *Config) *string { return &c.CryptoProfile },
		[]string{string(transport.ProfileDefault), string(transport.ProfileHardened)}, nil).
		own().supported("sshd.Config.CryptoProfile and the default algorithm lists").eg("hardened"),
	enumKW("CipherSelection", transport.SelectionMeasured, func(c *Config) *string { return &c.CipherSelection },
		[]string{transport.SelectionClient, transport.SelectionMeasured}, nil).
		own().supported("sshd.Config.CipherSelection: steer the client to a cipher measured faster than its choice").eg("client"),
	providerMapKW().own().supported("daemon: registry policy pins").eg("aes128-gcm=software"),
	providerDenyKW().own().supported("daemon: registry policy deny list").eg("aes128-ctr"),
	calibrationCacheKW().own().supported("daemon: registry calibration cache").eg("none"),
	boolKW("PrivilegeSeparation", true, func(c *Config) *bool { return &c.PrivilegeSeparation }).
		own().supported("sshd.Config.Separation").eg("no"),
	intKW("PreauthWorkers", 0, 1024, 0, func(c *Config) *int { return &c.PreauthWorkers }).
		own().supported("sshd.Separation.Workers").eg("3"),
	boolKW("PostauthPerConnection", false, func(c *Config) *bool { return &c.PostauthPerConnection }).
		own().supported("sshd.Separation.PerConnection").eg("yes"),
}

// aliases are old spellings OpenSSH accepts in place of a keyword.
var aliases = []alias{
	{"HostDSAKey", "HostKey"},
	{"HostbasedAcceptedKeyTypes", "HostbasedAcceptedAlgorithms"},
	{"PubkeyAcceptedKeyTypes", "PubkeyAcceptedAlgorithms"},
	{"DSAAuthentication", "PubkeyAuthentication"},
	{"ChallengeResponseAuthentication", "KbdInteractiveAuthentication"},
	{"SKeyAuthentication", "KbdInteractiveAuthentication"},
	{"KeepAlive", "TCPKeepAlive"},
}
