package config

import (
	"log/slog"
	"maps"
	"net"
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
type Config struct {
	Ports              []int
	AddressFamily      string   // any, inet, inet6
	ListenAddresses    []string // "host" or "host:port", as written
	HostKeys           []string // file paths or pkcs11: URIs
	AuthorizedKeysFile []string // "none" turns authorized_keys files off
	TrustedUserCAKeys  string   // "" for none
	// AuthorizedPrincipalsFile lists the principals accepted in
	// certificates from TrustedUserCAKeys ("" for none: the user name).
	AuthorizedPrincipalsFile string

	Ciphers           []string
	KexAlgorithms     []string
	MACs              []string
	HostKeyAlgorithms []string

	PasswordAuthentication bool
	PubkeyAuthentication   bool
	StrictModes            bool // check modes and owners of authorized_keys and its directories
	PermitUserEnvironment  bool // honour authorized_keys environment= options
	// PubkeyAcceptedAlgorithms and CASignatureAlgorithms are the user key
	// and certificate-signing algorithms accepted.
	PubkeyAcceptedAlgorithms []string
	CASignatureAlgorithms    []string
	PermitRootLogin          string // yes, prohibit-password, forced-commands-only, no
	AllowUsers               []string
	MaxAuthTries             int
	LoginGraceTime           time.Duration // 0: no limit
	Banner                   string        // file path; "" for none

	MaxStartups         MaxStartups
	MaxSessions         int
	ClientAliveInterval time.Duration // 0: no keepalive probes
	ClientAliveCountMax int
	TCPKeepAlive        bool // TCP keepalives on client connections
	Subsystems          []Subsystem
	AcceptEnv           []string
	AllowTCPForwarding  string // yes, all, no, local, remote
	ChannelWindowSize   int64  // bytes; 0 is auto (chosen per client by package sshd)
	RekeyLimit          RekeyLimit

	PidFile        string // "" for none
	LogLevel       string // QUIET, FATAL, ERROR, INFO, VERBOSE, DEBUG, DEBUG1-3
	MetricsAddress string // host:port; "" for none

	PKCS11Module     string   // module path or name; "" for none
	PKCS11Tokens     []string // pkcs11: URIs selecting tokens; empty: all
	PKCS11PinSource  string   // file holding the PIN; "" for the environment
	CryptoPolicy     provider.Mode
	CryptoProfile    string            // transport profile of the algorithm lists not set: default, hardened
	ProviderMap      map[string]string // algorithm -> provider spec
	ProviderDeny     []provider.DenyEntry
	CalibrationCache string // directory; "" for the user cache dir, "none" for no cache

	// set records the canonical keywords given in the file or overrides.
	set map[string]bool
}

// Subsystem is one Subsystem line: a name and the command serving it.
// "internal-sftp" is offload's built-in SFTP server.
type Subsystem struct {
	Name    string
	Command string
}

// Default values, as sshd's where offload has the keyword too.
const (
	DefaultPort               = 22
	DefaultMaxAuthTries       = 6
	DefaultMaxSessions        = 10
	DefaultLoginGraceTime     = 120 * time.Second
	DefaultClientAliveCount   = 3
	DefaultChannelWindowSize  = 0 // auto: 8 MiB, 2 MiB to OpenSSH clients (see package sshd)
	DefaultPermitRootLogin    = "prohibit-password"
	DefaultAllowTCPForwarding = "yes"
	DefaultLogLevel           = "INFO"
	InternalSFTP              = "internal-sftp"
)

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
		if !c.IsSet(kw.name) && kw.def != nil {
			kw.def(c)
		}
	}
}

// IsSet reports whether keyword (any case) was given in the file or
// overrides rather than defaulted. The transport, for instance, orders
// default ciphers by calibration but keeps an explicit Ciphers list as is.
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

// Clone returns a deep copy of c.
func (c *Config) Clone() *Config {
	d := *c
	d.Ports = slices.Clone(c.Ports)
	d.ListenAddresses = slices.Clone(c.ListenAddresses)
	d.HostKeys = slices.Clone(c.HostKeys)
	d.AuthorizedKeysFile = slices.Clone(c.AuthorizedKeysFile)
	d.Ciphers = slices.Clone(c.Ciphers)
	d.KexAlgorithms = slices.Clone(c.KexAlgorithms)
	d.MACs = slices.Clone(c.MACs)
	d.HostKeyAlgorithms = slices.Clone(c.HostKeyAlgorithms)
	d.AllowUsers = slices.Clone(c.AllowUsers)
	d.PubkeyAcceptedAlgorithms = slices.Clone(c.PubkeyAcceptedAlgorithms)
	d.CASignatureAlgorithms = slices.Clone(c.CASignatureAlgorithms)
	d.Subsystems = slices.Clone(c.Subsystems)
	d.AcceptEnv = slices.Clone(c.AcceptEnv)
	d.PKCS11Tokens = slices.Clone(c.PKCS11Tokens)
	d.ProviderMap = maps.Clone(c.ProviderMap)
	d.ProviderDeny = slices.Clone(c.ProviderDeny)
	d.set = maps.Clone(c.set)
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
func (c *Config) SlogLevel() slog.Level {
	switch strings.ToUpper(c.LogLevel) {
	case "QUIET":
		return slog.LevelError + 4
	case "FATAL", "ERROR":
		return slog.LevelError
	case "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3":
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
