package config

import (
	"log/slog"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/offload/offload/provider"
)

// Config is a parsed sshd configuration. Parse and Load return one with
// every keyword the file and overrides left out set to its default, so the
// fields hold the effective values. The zero Config is an empty
// configuration: Print and IsSet work on it, and FillDefaults turns it
// into Defaults().
//
// Fields of refused and inert keywords (see KeywordTable) hold the only
// value offload accepts for them, so that -T prints what offload does.
type Config struct {
	// Listening (daemon).
	Ports           []int
	AddressFamily   string   // any, inet, inet6
	ListenAddresses []string // "host" or "host:port", as written
	HostKeys        []string // file paths or pkcs11: URIs
	// HostCertificates are host certificate files (refused: not yet).
	HostCertificates    []string
	HostKeyAgent        string // "" for none
	PidFile             string // "" for none
	ModuliFile          string
	LogLevel            string // QUIET, FATAL, ERROR, INFO, VERBOSE, DEBUG, DEBUG1-3
	SyslogFacility      string // AUTH, AUTHPRIV, DAEMON, USER, LOCAL0-7
	LogVerbose          []string
	TCPKeepAlive        bool // TCP keepalives on client connections
	UseDNS              bool
	VersionAddendum     string // "" for none
	RDomain             string // "" for none
	IPQoS               [2]string
	Compression         string // yes (delayed, its synonym, is read as yes) or no
	FingerprintHash     string // SHA256 or MD5
	SecurityKeyProvider string
	SshdSessionPath     string
	SshdAuthPath        string
	DebianBanner        bool

	// Algorithms.
	Ciphers           []string
	KexAlgorithms     []string
	MACs              []string
	HostKeyAlgorithms []string
	RekeyLimit        RekeyLimit

	// Authentication.
	AuthorizedKeysFile []string // "none" turns authorized_keys files off
	TrustedUserCAKeys  string   // "" for none
	// AuthorizedPrincipalsFile lists the principals accepted in
	// certificates from TrustedUserCAKeys ("" for none: the user name).
	AuthorizedPrincipalsFile        string
	RevokedKeys                     string // "" for none
	AuthorizedKeysCommand           string // "" for none
	AuthorizedKeysCommandUser       string
	AuthorizedPrincipalsCommand     string
	AuthorizedPrincipalsCommandUser string
	AuthenticationMethods           []string // empty: any
	PasswordAuthentication          bool
	PermitEmptyPasswords            bool
	KbdInteractiveAuthentication    bool
	UsePAM                          bool
	PAMServiceName                  string
	PubkeyAuthentication            bool
	PubkeyAuthOptions               []string // touch-required, verify-required
	HostbasedAuthentication         bool
	HostbasedUsesNameFromPacketOnly bool
	HostbasedAcceptedAlgorithms     []string
	IgnoreRhosts                    string // yes, no, shosts-only
	IgnoreUserKnownHosts            bool
	StrictModes                     bool // check modes and owners of authorized_keys and its directories
	// PermitUserEnvironment turns on ~/.ssh/environment and authorized_keys
	// environment= options (yes or a pattern list); the list, when given,
	// holds the patterns of the variable names accepted.
	PermitUserEnvironment     bool
	PermitUserEnvironmentList []string
	// PubkeyAcceptedAlgorithms and CASignatureAlgorithms are the user key
	// and certificate-signing algorithms accepted.
	PubkeyAcceptedAlgorithms []string
	CASignatureAlgorithms    []string
	RequiredRSASize          int
	PermitRootLogin          string // yes, prohibit-password, forced-commands-only, no
	AllowUsers               []string
	DenyUsers                []string
	AllowGroups              []string
	DenyGroups               []string
	MaxAuthTries             int
	LoginGraceTime           time.Duration // 0: no limit
	Banner                   string        // file path; "" for none
	ExposeAuthInfo           bool
	RefuseConnection         bool

	// Connections and sessions.
	MaxStartups                MaxStartups
	PerSourceMaxStartups       int // 0: none
	PerSourceNetBlockSize      [2]int
	PerSourcePenalties         []string // "no", or the penalty settings
	PerSourcePenaltyExemptList string
	MaxSessions                int
	ClientAliveInterval        time.Duration // 0: no keepalive probes
	ClientAliveCountMax        int
	UnusedConnectionTimeout    time.Duration // 0: none
	ChannelTimeout             []string      // empty: none
	Subsystems                 []Subsystem
	AcceptEnv                  []string
	SetEnv                     []string
	ForceCommand               string // "" for none
	ChrootDirectory            string // "" for none
	PermitTTY                  bool
	PermitUserRC               bool
	PrintMotd                  bool
	PrintLastLog               bool
	ChannelWindowSize          int64 // bytes; 0 is auto (chosen per client by package sshd)

	// Forwarding.
	AllowTCPForwarding         string // yes, all, no, local, remote
	AllowStreamLocalForwarding string
	AllowAgentForwarding       bool
	DisableForwarding          bool
	GatewayPorts               string // no, yes, clientspecified
	PermitOpen                 []string
	PermitListen               []string
	PermitTunnel               string
	StreamLocalBindMask        uint32
	StreamLocalBindUnlink      bool
	X11Forwarding              bool
	X11DisplayOffset           int
	X11UseLocalhost            bool
	XAuthLocation              string

	// offload's own.
	MetricsAddress   string   // host:port; "" for none
	PKCS11Module     string   // module path or name; "" for none
	PKCS11Tokens     []string // pkcs11: URIs selecting tokens; empty: all
	PKCS11PinSource  string   // file holding the PIN; "" for the environment
	PKCS11Env        []string // NAME=VALUE set for the PKCS #11 module before it loads
	PKCS11StateDir   string   // where refused PINs are recorded; "" for the default, "none" for memory only
	CryptoPolicy     provider.Mode
	CryptoProfile    string            // transport profile of the algorithm lists not set: default, hardened
	CipherSelection  string            // measured (default): steer to a cipher measured faster than the client's; client: its order
	ProviderMap      map[string]string // algorithm -> provider spec
	ProviderDeny     []provider.DenyEntry
	CalibrationCache string // directory; "" for the user cache dir, "none" for no cache

	// The process model: PrivilegeSeparation runs pre-auth workers and
	// post-auth processes (PreauthWorkers of them, 0 for one per CPU; one
	// post-auth process per user, or per connection).
	PrivilegeSeparation   bool
	PreauthWorkers        int
	PostauthPerConnection bool

	// set records the canonical keywords given in the file or overrides.
	set map[string]bool
	// src is what Parse read, kept for ForConnection.
	src *source
	// warnings are the parse warnings (deprecated keywords, algorithms
	// offload lacks); lineWarn collects a setter's, moved there by the
	// parser.
	warnings []Warning
	lineWarn []string
}

// Subsystem is one Subsystem line: a name and the command serving it.
// "internal-sftp" is offload's built-in SFTP server.
type Subsystem struct {
	Name    string
	Command string
}

// Default values, as sshd's where offload has the keyword too. Those of
// settings a lower layer applies are declared there only
// (auth.DefaultLoginGraceTime, auth.DefaultMaxAuthTries,
// connection.DefaultMaxSessions, connection.DefaultClientAliveCountMax,
// connection.DefaultX11DisplayOffset, connection.DefaultXAuthLocation).
const (
	DefaultPort               = 22
	DefaultChannelWindowSize  = 0 // auto: 8 MiB, 2 MiB to OpenSSH clients, growing with the round trip (connection.ForClient)
	DefaultPermitRootLogin    = "prohibit-password"
	DefaultAllowTCPForwarding = "yes"
	DefaultLogLevel           = "INFO"
	DefaultSyslogFacility     = "AUTH"
	InternalSFTP              = "internal-sftp"
)

// DefaultHostKeys are the host key files used, as by sshd, when no
// HostKey is configured: those of them that exist.
var DefaultHostKeys = []string{"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key"}

// DefaultMaxStartups is sshd's 10:30:100.
var DefaultMaxStartups = MaxStartups{Start: 10, Rate: 30, Full: 100}

// Defaults returns the configuration of an empty file.
func Defaults() *Config {
	c := new(Config)
	c.FillDefaults()
	return c
}

// FillDefaults sets every keyword not given in the file or overrides to
// its default.
func (c *Config) FillDefaults() {
	for _, kw := range keywords {
		if !c.IsSet(kw.name) {
			kw.applyDefault(c)
		}
	}
}

// IsSet reports whether keyword (any case, aliases too) was given in the
// file or overrides rather than defaulted. The transport, for instance,
// orders default ciphers by calibration but keeps an explicit Ciphers list
// as is; the daemon skips default host keys that do not exist.
func (c *Config) IsSet(keyword string) bool {
	kw, ok := lookupKeyword(keyword)
	return ok && c.set[kw.name]
}

func (c *Config) markSet(name string) {
	if c.set == nil {
		c.set = map[string]bool{}
	}
	c.set[name] = true
}

// Warnings returns the warnings of parsing: deprecated and unsupported
// keywords, and algorithm names offload does not implement. The caller
// logs them (offload sshd -t prints them).
func (c *Config) Warnings() []Warning { return slices.Clone(c.warnings) }

// Clone returns a deep copy of c.
func (c *Config) Clone() *Config {
	d := *c
	v := reflect.ValueOf(&d).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch f.Kind() {
		case reflect.Slice:
			if !f.IsNil() {
				f.Set(reflect.AppendSlice(reflect.MakeSlice(f.Type(), 0, f.Len()), f))
			}
		case reflect.Map:
			if !f.IsNil() {
				m := reflect.MakeMapWithSize(f.Type(), f.Len())
				for it := f.MapRange(); it.Next(); {
					m.SetMapIndex(it.Key(), it.Value())
				}
				f.Set(m)
			}
		}
	}
	d.set = maps.Clone(c.set)
	d.warnings = slices.Clone(c.warnings)
	d.lineWarn = nil
	return &d
}

// Addrs returns the addresses to listen on: each ListenAddress with its own
// port, or with every Port when it names none. No ListenAddress means
// every interface.
func (c *Config) Addrs() []string {
	ports := c.Ports
	if len(ports) == 0 {
		ports = []int{DefaultPort}
	}
	listen := c.ListenAddresses
	if len(listen) == 0 {
		listen = []string{map[string]string{"inet": "0.0.0.0", "inet6": "::"}[c.AddressFamily]}
	}
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, la := range listen {
		host, port, err := parseListenAddress(la)
		if la == "" || err != nil {
			host, port = la, ""
		}
		if port != "" {
			add(net.JoinHostPort(host, port))
			continue
		}
		for _, p := range ports {
			add(net.JoinHostPort(host, strconv.Itoa(p)))
		}
	}
	return out
}

// ListenNetwork is the network to listen on for AddressFamily: "tcp",
// "tcp4" or "tcp6".
func (c *Config) ListenNetwork() string {
	switch c.AddressFamily {
	case "inet":
		return "tcp4"
	case "inet6":
		return "tcp6"
	}
	return "tcp"
}

// Policy returns the registry policy the provider keywords describe.
func (c *Config) Policy() provider.Policy {
	return provider.Policy{Mode: c.CryptoPolicy, Pins: maps.Clone(c.ProviderMap), Deny: slices.Clone(c.ProviderDeny)}
}

// Subsystem returns the command serving name, or "" when there is none.
func (c *Config) Subsystem(name string) string {
	for _, s := range c.Subsystems {
		if s.Name == name {
			return s.Command
		}
	}
	return ""
}

// SlogLevel maps LogLevel to a slog level: DEBUG and above to Debug,
// VERBOSE and INFO to Info, ERROR and FATAL to Error, QUIET above Error.
func (c *Config) SlogLevel() slog.Level { return SlogLevel(c.LogLevel) }

// SlogLevel maps an sshd LogLevel name to a slog level (see
// Config.SlogLevel); an unknown name is Info.
func SlogLevel(level string) slog.Level {
	switch strings.ToUpper(level) {
	case "QUIET":
		return slog.LevelError + 4
	case "FATAL", "ERROR":
		return slog.LevelError
	case "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3":
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
