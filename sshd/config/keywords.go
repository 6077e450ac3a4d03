package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/offload/offload/sshd/transport"
)

// keyword describes one configuration keyword: how many arguments it takes,
// how they set the Config, its default and how -T prints it.
type keyword struct {
	name    string // canonical spelling, as in sshd_config(5)
	multi   bool   // repeated lines accumulate; otherwise the first one wins
	minArgs int
	maxArgs int // -1: unlimited
	set     func(c *Config, args []string) error
	def     func(c *Config)
	print   func(c *Config) [][]string // one argument list per printed line
}

var keywords = []*keyword{
	{name: "Port", multi: true, minArgs: 1, maxArgs: 1, set: setPort,
		def: func(c *Config) { c.Ports = []int{DefaultPort} }, print: printPorts},
	{name: "ListenAddress", multi: true, minArgs: 1, maxArgs: 1, set: setListenAddress,
		def: func(c *Config) { c.ListenAddresses = nil }, print: printListen},
	enumKW("AddressFamily", "any", func(c *Config) *string { return &c.AddressFamily }, []string{"any", "inet", "inet6"}, nil),
	{name: "HostKey", multi: true, minArgs: 1, maxArgs: 1, set: setHostKey,
		def: func(c *Config) { c.HostKeys = nil }, print: eachLine(func(c *Config) []string { return redactAll(c.HostKeys) })},
	{name: "AuthorizedKeysFile", minArgs: 1, maxArgs: -1, set: setAuthorizedKeysFile,
		def:   func(c *Config) { c.AuthorizedKeysFile = []string{".ssh/authorized_keys"} },
		print: func(c *Config) [][]string { return [][]string{orNone(c.AuthorizedKeysFile)} }},
	pathKW("TrustedUserCAKeys", func(c *Config) *string { return &c.TrustedUserCAKeys }),
	pathKW("AuthorizedPrincipalsFile", func(c *Config) *string { return &c.AuthorizedPrincipalsFile }),
	algKW("Ciphers", CipherList, func(c *Config) *[]string { return &c.Ciphers }),
	algKW("KexAlgorithms", KexList, func(c *Config) *[]string { return &c.KexAlgorithms }),
	algKW("MACs", MACList, func(c *Config) *[]string { return &c.MACs }),
	algKW("HostKeyAlgorithms", HostKeyAlgList, func(c *Config) *[]string { return &c.HostKeyAlgorithms }),
	boolKW("PasswordAuthentication", false, func(c *Config) *bool { return &c.PasswordAuthentication }),
	boolKW("PubkeyAuthentication", true, func(c *Config) *bool { return &c.PubkeyAuthentication }),
	boolKW("StrictModes", true, func(c *Config) *bool { return &c.StrictModes }),
	boolKW("PermitUserEnvironment", false, func(c *Config) *bool { return &c.PermitUserEnvironment }),
	algKW("PubkeyAcceptedAlgorithms", PubkeyList, func(c *Config) *[]string { return &c.PubkeyAcceptedAlgorithms }),
	algKW("CASignatureAlgorithms", CASigList, func(c *Config) *[]string { return &c.CASignatureAlgorithms }),
	enumKW("PermitRootLogin", DefaultPermitRootLogin, func(c *Config) *string { return &c.PermitRootLogin },
		[]string{"yes", "prohibit-password", "forced-commands-only", "no"}, map[string]string{"without-password": "prohibit-password"}),
	{name: "AllowUsers", multi: true, minArgs: 1, maxArgs: -1, set: setAllowUsers,
		def: func(c *Config) { c.AllowUsers = nil }, print: eachLine(func(c *Config) []string { return c.AllowUsers })},
	{name: "MaxStartups", minArgs: 1, maxArgs: 1, set: setMaxStartups,
		def:   func(c *Config) { c.MaxStartups = DefaultMaxStartups },
		print: func(c *Config) [][]string { return [][]string{{c.MaxStartups.String()}} }},
	intKW("MaxAuthTries", 1, 1000, DefaultMaxAuthTries, func(c *Config) *int { return &c.MaxAuthTries }),
	intKW("MaxSessions", 0, 10000, DefaultMaxSessions, func(c *Config) *int { return &c.MaxSessions }),
	timeKW("LoginGraceTime", DefaultLoginGraceTime, func(c *Config) *time.Duration { return &c.LoginGraceTime }),
	timeKW("ClientAliveInterval", 0, func(c *Config) *time.Duration { return &c.ClientAliveInterval }),
	intKW("ClientAliveCountMax", 0, 1000, DefaultClientAliveCount, func(c *Config) *int { return &c.ClientAliveCountMax }),
	boolKW("TCPKeepAlive", true, func(c *Config) *bool { return &c.TCPKeepAlive }),
	{name: "Subsystem", multi: true, minArgs: 2, maxArgs: -1, set: setSubsystem,
		def: func(c *Config) { c.Subsystems = []Subsystem{{Name: "sftp", Command: InternalSFTP}} }, print: printSubsystems},
	{name: "AcceptEnv", multi: true, minArgs: 1, maxArgs: -1, set: setAcceptEnv,
		def: func(c *Config) { c.AcceptEnv = nil }, print: eachLine(func(c *Config) []string { return c.AcceptEnv })},
	enumKW("AllowTcpForwarding", DefaultAllowTCPForwarding, func(c *Config) *string { return &c.AllowTCPForwarding },
		[]string{"yes", "all", "no", "local", "remote"}, nil),
	pathKW("Banner", func(c *Config) *string { return &c.Banner }),
	pathKW("PidFile", func(c *Config) *string { return &c.PidFile }),
	enumKW("LogLevel", DefaultLogLevel, func(c *Config) *string { return &c.LogLevel },
		[]string{"QUIET", "FATAL", "ERROR", "INFO", "VERBOSE", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3"}, nil),
	{name: "RekeyLimit", minArgs: 1, maxArgs: 2, set: setRekeyLimit,
		def: func(c *Config) { c.RekeyLimit = RekeyLimit{} },
		print: func(c *Config) [][]string {
			return [][]string{{strconv.FormatInt(c.RekeyLimit.Bytes, 10), formatSeconds(c.RekeyLimit.Interval)}}
		}},
	// offload's own keywords.
	pathKW("PKCS11Module", func(c *Config) *string { return &c.PKCS11Module }),
	{name: "PKCS11Token", multi: true, minArgs: 1, maxArgs: 1, set: setPKCS11Token,
		def: func(c *Config) { c.PKCS11Tokens = nil }, print: eachLine(func(c *Config) []string { return redactAll(c.PKCS11Tokens) })},
	pathKW("PKCS11PinSource", func(c *Config) *string { return &c.PKCS11PinSource }),
	// CryptoProfile: the algorithm lists not set in the file take the
	// profile's defaults (FillDefaults runs after the whole file).
	enumKW("CryptoProfile", string(transport.ProfileDefault), func(c *Config) *string { return &c.CryptoProfile },
		[]string{string(transport.ProfileDefault), string(transport.ProfileHardened)}, nil),
	{name: "CryptoPolicy", minArgs: 1, maxArgs: 1, set: setCryptoPolicy,
		def:   func(c *Config) { c.CryptoPolicy = 0 },
		print: func(c *Config) [][]string { return [][]string{{c.CryptoPolicy.String()}} }},
	{name: "ProviderMap", multi: true, minArgs: 1, maxArgs: -1, set: setProviderMap,
		def: func(c *Config) { c.ProviderMap = nil }, print: printProviderMap},
	{name: "ProviderDeny", multi: true, minArgs: 1, maxArgs: -1, set: setProviderDeny,
		def: func(c *Config) { c.ProviderDeny = nil }, print: printProviderDeny},
	{name: "ChannelWindowSize", minArgs: 1, maxArgs: 1, set: setWindow,
		def:   func(c *Config) { c.ChannelWindowSize = DefaultChannelWindowSize },
		print: printWindow},
	{name: "MetricsAddress", minArgs: 1, maxArgs: 1, set: setMetricsAddress,
		def:   func(c *Config) { c.MetricsAddress = "" },
		print: func(c *Config) [][]string { return [][]string{{noneIfEmpty(c.MetricsAddress)}} }},
	{name: "CalibrationCache", minArgs: 1, maxArgs: 1, set: setCalibrationCache,
		def:   func(c *Config) { c.CalibrationCache = "" },
		print: func(c *Config) [][]string { return [][]string{{defaultIfEmpty(c.CalibrationCache)}} }},
}

// unsupported are sshd keywords offload does not implement at all; they
// get a clearer error than an unknown word. (Those that can be turned off
// are in compatKeywords.)
var unsupported = []string{"Match", "Include" /* in -o; files handle it */, "ChrootDirectory", "ForceCommand", "DenyUsers", "AllowGroups",
	"DenyGroups", "AuthorizedKeysCommand", "AuthorizedKeysCommandUser", "AuthorizedPrincipalsCommand",
	"HostCertificate", "PermitOpen", "PermitListen", "X11DisplayOffset", "X11UseLocalhost", "XAuthLocation",
	"HostKeyAgent", "RevokedKeys", "PubkeyAcceptedKeyTypes", "AuthenticationMethods", "ExposeAuthInfo", "VersionAddendum",
	"StreamLocalBindMask", "StreamLocalBindUnlink", "IPQoS", "ModuliFile", "SecurityKeyProvider",
	"ChannelTimeout", "UnusedConnectionTimeout", "RDomain", "DisableForwarding", "PerSourceMaxStartups",
	"PerSourceNetBlockSize", "RequiredRSASize", "LogVerbose"}

var (
	// ErrUnknownKeyword is wrapped by the error for a word that is no keyword.
	ErrUnknownKeyword = errors.New("unknown keyword")
	// ErrUnsupported is wrapped by the error for an sshd keyword offload
	// does not implement (Match, Include, UsePAM, ...).
	ErrUnsupported = errors.New("not supported by offload sshd")
)

var keywordIndex = func() map[string]*keyword {
	m := make(map[string]*keyword, len(keywords)+len(compatKeywords))
	for _, kw := range append(keywords[:len(keywords):len(keywords)], compatKeywords...) {
		m[strings.ToLower(kw.name)] = kw
	}
	return m
}()

func lookupKeyword(name string) (*keyword, bool) {
	kw, ok := keywordIndex[strings.ToLower(name)]
	return kw, ok
}

// Keywords returns the canonical names of every keyword, in -T order.
func Keywords() []string {
	out := make([]string, len(keywords))
	for i, kw := range keywords {
		out[i] = kw.name
	}
	return out
}

func unknownKeyword(name string) error {
	for _, u := range unsupported {
		if strings.EqualFold(u, name) {
			if strings.EqualFold(name, "Match") {
				return fmt.Errorf("Match blocks are %w", ErrUnsupported)
			}
			if strings.EqualFold(name, "Include") {
				return fmt.Errorf("Include in a -o option is %w (only in files)", ErrUnsupported)
			}
			return ErrUnsupported
		}
	}
	return ErrUnknownKeyword
}

func checkArgs(kw *keyword, args []string) error {
	switch {
	case len(args) < kw.minArgs && kw.minArgs == 1:
		return errors.New("missing argument")
	case len(args) < kw.minArgs:
		return fmt.Errorf("needs at least %d arguments", kw.minArgs)
	case kw.maxArgs >= 0 && len(args) > kw.maxArgs:
		return fmt.Errorf("takes %d argument(s), got %d (quote arguments holding blanks)", kw.maxArgs, len(args))
	}
	return nil
}

// Keyword constructors for the common shapes.

func boolKW(name string, def bool, field func(*Config) *bool) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) (err error) { *field(c), err = parseBool(a[0]); return err },
		def: func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string {
			return [][]string{{formatBool(*field(c))}}
		}}
}

func intKW(name string, lo, hi, def int, field func(*Config) *int) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) (err error) { *field(c), err = parseInt(a[0], lo, hi); return err },
		def: func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string {
			return [][]string{{strconv.Itoa(*field(c))}}
		}}
}

func timeKW(name string, def time.Duration, field func(*Config) *time.Duration) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) (err error) { *field(c), err = ParseTime(a[0]); return err },
		def: func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string {
			return [][]string{{formatSeconds(*field(c))}}
		}}
}

// pathKW is a single path where "none" (any case) means unset.
func pathKW(name string, field func(*Config) *string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			if a[0] == "" {
				return errors.New("empty path")
			}
			if strings.EqualFold(a[0], "none") {
				a[0] = ""
			}
			*field(c) = a[0]
			return nil
		},
		def: func(c *Config) { *field(c) = "" },
		print: func(c *Config) [][]string {
			return [][]string{{noneIfEmpty(*field(c))}}
		}}
}

func enumKW(name, def string, field func(*Config) *string, choices []string, aliases map[string]string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			v := a[0]
			if alias, ok := aliases[strings.ToLower(v)]; ok {
				v = alias
			}
			for _, ch := range choices {
				if strings.EqualFold(ch, v) {
					*field(c) = ch
					return nil
				}
			}
			return fmt.Errorf("%q is not one of %s", a[0], strings.Join(choices, ", "))
		},
		def: func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string {
			return [][]string{{*field(c)}}
		}}
}

func algKW(name string, list AlgList, field func(*Config) *[]string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) (err error) { *field(c), err = ParseAlgList(list, a[0]); return err },
		def: func(c *Config) { *field(c) = profileDefaults(c.CryptoProfile, list) },
		print: func(c *Config) [][]string {
			return [][]string{{strings.Join(*field(c), ",")}}
		}}
}

func eachLine(values func(*Config) []string) func(*Config) [][]string {
	return func(c *Config) [][]string {
		var out [][]string
		for _, v := range values(c) {
			out = append(out, []string{v})
		}
		return out
	}
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func defaultIfEmpty(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}

// Limits on accumulating keywords, so that no file makes the server
// build huge tables (sshd caps ports at 256 too).
const (
	maxPorts       = 256
	maxListen      = 256
	maxHostKeys    = 64
	maxTokens      = 64
	maxListEntries = 4096 // AllowUsers, AcceptEnv
)

func checkCount(n, limit int, what string) error {
	if n > limit {
		return fmt.Errorf("more than %d %s", limit, what)
	}
	return nil
}

// Setters of the keywords with their own shapes.

func setPort(c *Config, a []string) error {
	p, err := parseInt(a[0], 1, 65535)
	if err != nil {
		return err
	}
	c.Ports = appendInt(c.Ports, p)
	return checkCount(len(c.Ports), maxPorts, "ports")
}

func appendInt(s []int, v int) []int {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func printPorts(c *Config) [][]string {
	var out [][]string
	for _, p := range c.Ports {
		out = append(out, []string{strconv.Itoa(p)})
	}
	return out
}

func setListenAddress(c *Config, a []string) error {
	if _, _, err := parseListenAddress(a[0]); err != nil {
		return err
	}
	c.ListenAddresses = appendNew(c.ListenAddresses, a[0])
	return checkCount(len(c.ListenAddresses), maxListen, "listen addresses")
}

// printListen prints the resolved addresses, as sshd -T does.
func printListen(c *Config) [][]string {
	if len(c.ListenAddresses) == 0 {
		return nil
	}
	return eachLine((*Config).Addrs)(c)
}

func setHostKey(c *Config, a []string) error {
	if a[0] == "" {
		return errors.New("empty host key path")
	}
	if strings.HasPrefix(strings.ToLower(a[0]), "pkcs11:") {
		if err := checkPKCS11URI(a[0]); err != nil {
			return err
		}
	}
	c.HostKeys = appendNew(c.HostKeys, a[0])
	return checkCount(len(c.HostKeys), maxHostKeys, "host keys")
}

func setAuthorizedKeysFile(c *Config, a []string) error {
	if len(a) == 1 && strings.EqualFold(a[0], "none") {
		c.AuthorizedKeysFile = nil
		return nil
	}
	for _, f := range a {
		if f == "" {
			return errors.New("empty file name")
		}
		if err := checkTokens(f); err != nil {
			return err
		}
	}
	c.AuthorizedKeysFile = slices.Clone(a)
	return nil
}

// checkTokens rejects %-tokens other than sshd's %%, %h, %u and %U.
func checkTokens(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if i+1 >= len(s) || !strings.ContainsRune("%huU", rune(s[i+1])) {
			return fmt.Errorf("%q: unknown %%-token (use %%h, %%u, %%U or %%%%)", s)
		}
		i++
	}
	return nil
}

func setAllowUsers(c *Config, a []string) error {
	for _, u := range a {
		if u == "" || strings.ContainsAny(u, " \t,") {
			return fmt.Errorf("bad user pattern %q", u)
		}
	}
	if err := checkCount(len(c.AllowUsers)+len(a), maxListEntries, "AllowUsers patterns"); err != nil {
		return err
	}
	c.AllowUsers = appendNew(c.AllowUsers, a...)
	return nil
}

func setMaxStartups(c *Config, a []string) (err error) {
	c.MaxStartups, err = ParseMaxStartups(a[0])
	return err
}

func setSubsystem(c *Config, a []string) error {
	name := a[0]
	if name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("bad subsystem name %q", name)
	}
	if c.Subsystem(name) != "" {
		return fmt.Errorf("subsystem %q is defined twice", name)
	}
	c.Subsystems = append(c.Subsystems, Subsystem{Name: name, Command: strings.Join(a[1:], " ")})
	return nil
}

func printSubsystems(c *Config) [][]string {
	var out [][]string
	for _, s := range c.Subsystems {
		out = append(out, []string{s.Name, s.Command})
	}
	return out
}

func setAcceptEnv(c *Config, a []string) error {
	for _, v := range a {
		if v == "" || strings.ContainsAny(v, "= \t") {
			return fmt.Errorf("bad environment variable pattern %q", v)
		}
	}
	if err := checkCount(len(c.AcceptEnv)+len(a), maxListEntries, "AcceptEnv patterns"); err != nil {
		return err
	}
	c.AcceptEnv = appendNew(c.AcceptEnv, a...)
	return nil
}

func setRekeyLimit(c *Config, a []string) (err error) {
	c.RekeyLimit, err = parseRekeyLimit(a)
	return err
}

// maxWindow is the largest SSH channel window (uint32).
const maxWindow = 1<<32 - 1

// minWindow is the smallest window offload accepts: one maximum packet.
const minWindow = 32 << 10

func setWindow(c *Config, a []string) error {
	if strings.EqualFold(a[0], "auto") {
		c.ChannelWindowSize = 0
		return nil
	}
	n, err := ParseSize(a[0], maxWindow)
	if err != nil {
		return err
	}
	if n < minWindow {
		return fmt.Errorf("%q is below %d bytes (one packet); small windows make transfers slow", a[0], minWindow)
	}
	c.ChannelWindowSize = n
	return nil
}

func printWindow(c *Config) [][]string {
	if c.ChannelWindowSize == 0 {
		return [][]string{{"auto"}}
	}
	return [][]string{{strconv.FormatInt(c.ChannelWindowSize, 10)}}
}

func setMetricsAddress(c *Config, a []string) error {
	if strings.EqualFold(a[0], "none") {
		c.MetricsAddress = ""
		return nil
	}
	if err := checkHostPort(a[0]); err != nil {
		return err
	}
	c.MetricsAddress = a[0]
	return nil
}

func setCalibrationCache(c *Config, a []string) error {
	switch {
	case a[0] == "":
		return errors.New("empty path")
	case strings.EqualFold(a[0], "default"):
		c.CalibrationCache = ""
	case strings.EqualFold(a[0], "none"):
		c.CalibrationCache = "none"
	default:
		c.CalibrationCache = a[0]
	}
	return nil
}
