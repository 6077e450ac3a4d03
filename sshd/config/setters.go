package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/sftp"
)

// Keywords with their own shapes.

// inertUnless marks a keyword inert while off reports that the feature it
// configures is absent from offload (for features no keyword turns on).
func (kw *keyword) inertUnless(off func() bool, what string) *keyword {
	kw.status, kw.inertOff, kw.what = Inert, off, what
	return kw
}

// accInts accumulates integers in [1, 65535] (Port).
func accInts(name string, limit, def int, field func(*Config) *[]int) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1, repeat: accumulate,
		set: func(c *Config, a []string) error {
			p, err := parseInt(a[0], 1, 65535)
			if err != nil {
				return err
			}
			*field(c) = appendInt(*field(c), p)
			return checkCount(len(*field(c)), limit, "ports")
		},
		def: func(c *Config) { *field(c) = []int{def} },
		print: func(c *Config) [][]string {
			var out [][]string
			for _, p := range *field(c) {
				out = append(out, []string{strconv.Itoa(p)})
			}
			return out
		}}
}

func listenKW() *keyword {
	return &keyword{name: "ListenAddress", minArgs: 1, maxArgs: 3, repeat: accumulate,
		set: func(c *Config, a []string) error {
			if _, _, err := parseListenAddress(a[0]); err != nil {
				return err
			}
			if len(a) > 1 {
				if len(a) != 3 || a[1] != "rdomain" {
					return errors.New("bad ListenAddress syntax (want address [rdomain name])")
				}
				return notImplemented("listening in a routing domain (rdomain %s)", a[2])
			}
			c.ListenAddresses = appendNew(c.ListenAddresses, a[0])
			return checkCount(len(c.ListenAddresses), maxListen, "listen addresses")
		},
		def:   func(c *Config) { c.ListenAddresses = nil },
		print: printListen}
}

// printListen prints the resolved addresses, as sshd -T does; without a
// ListenAddress, the wildcard addresses of the address family, IPv6
// first, for each port (offload listens on one dual-stack socket there).
func printListen(c *Config) [][]string {
	if len(c.ListenAddresses) > 0 {
		return eachLine((*Config).Addrs)(c)
	}
	hosts := map[string][]string{"inet": {"0.0.0.0"}, "inet6": {"::"}}[c.AddressFamily]
	if hosts == nil {
		hosts = []string{"::", "0.0.0.0"}
	}
	ports := c.Ports
	if len(ports) == 0 {
		ports = []int{DefaultPort}
	}
	var out [][]string
	for _, p := range ports {
		for _, h := range hosts {
			out = append(out, []string{net.JoinHostPort(h, strconv.Itoa(p))})
		}
	}
	return out
}

func hostKeyKW() *keyword {
	return &keyword{name: "HostKey", minArgs: 1, maxArgs: 1, repeat: accumulate,
		set: func(c *Config, a []string) error {
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
		},
		def:   func(c *Config) { c.HostKeys = slices.Clone(DefaultHostKeys) },
		print: eachLine(func(c *Config) []string { return redactAll(c.HostKeys) })}
}

func authorizedKeysKW() *keyword {
	return &keyword{name: "AuthorizedKeysFile", minArgs: 1, maxArgs: -1,
		set: func(c *Config, a []string) error {
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
		},
		def:   func(c *Config) { c.AuthorizedKeysFile = []string{".ssh/authorized_keys", ".ssh/authorized_keys2"} },
		print: func(c *Config) [][]string { return [][]string{orNone(c.AuthorizedKeysFile)} }}
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

func nonEmpty(string) error { return nil } // listKW refuses empty words itself

// checkUserPattern checks an AllowUsers/DenyUsers entry as sshd does:
// "user" or "user@hosts". The user part is one wildcard pattern in which
// ',' and '!' are plain characters ("*,!root" matches only names ending
// in ",!root"), so only the host list after the first '@' can be wrong.
func checkUserPattern(u string) error {
	_, h, ok := strings.Cut(u, "@")
	if !ok {
		return nil
	}
	if _, err := addrMatch("", h); err != nil {
		return fmt.Errorf("bad user pattern %q: %w", u, err)
	}
	return nil
}

func checkEnvName(v string) error {
	if strings.ContainsAny(v, "= \t") {
		return fmt.Errorf("bad environment variable pattern %q", v)
	}
	return nil
}

func checkSetEnv(a []string) error {
	for _, v := range a {
		if i := strings.IndexByte(v, '='); i <= 0 {
			return fmt.Errorf("%q is not NAME=value", v)
		}
	}
	return nil
}

// authMethods are the method names AuthenticationMethods may list.
var authMethods = []string{"publickey", "password", "keyboard-interactive", "hostbased", "gssapi-with-mic", "none"}

func checkAuthMethods(a []string) error {
	for _, list := range a {
		if list == "any" {
			if len(a) > 1 {
				return errors.New(`"any" must appear alone`)
			}
			continue
		}
		for m := range strings.SplitSeq(list, ",") {
			name, _, _ := strings.Cut(m, ":")
			if !slices.Contains(authMethods, name) {
				return fmt.Errorf("unknown authentication method %q in %q", name, list)
			}
		}
	}
	return nil
}

func checkLogVerbose(a []string) error {
	for _, v := range a {
		if strings.EqualFold(v, "none") && len(a) > 1 {
			return errors.New(`"none" must appear alone`)
		}
	}
	return nil
}

func checkChannelTimeout(a []string) error {
	for _, v := range a {
		if strings.EqualFold(v, "none") {
			if len(a) > 1 {
				return errors.New(`"none" must appear alone`)
			}
			continue
		}
		typ, t, ok := strings.Cut(v, "=")
		if !ok || typ == "" {
			return fmt.Errorf("%q is not type=interval", v)
		}
		if _, err := ParseTime(t); err != nil {
			return fmt.Errorf("%q: %w", v, err)
		}
	}
	return nil
}

// checkPermitOpen checks PermitOpen (host:port) or PermitListen ([host:]port)
// entries; "any" and "none" must stand alone.
func checkPermitOpen(listen bool) func([]string) error {
	return func(a []string) error {
		for _, v := range a {
			if v == "any" || v == "none" {
				if len(a) > 1 {
					return fmt.Errorf("%q must appear alone", v)
				}
				continue
			}
			host, port, err := net.SplitHostPort(v)
			if err != nil && listen && !strings.Contains(v, ":") {
				host, port, err = "*", v, nil
			}
			if err != nil || host == "" {
				return fmt.Errorf("%q is not host:port", v)
			}
			if port != "*" {
				if _, err := parseInt(port, 0, 65535); err != nil {
					return fmt.Errorf("%q: bad port", v)
				}
			}
		}
		return nil
	}
}

func checkPubkeyAuthOptions(a []string) error {
	for _, v := range a {
		if !slices.Contains([]string{"none", "touch-required", "verify-required"}, strings.ToLower(v)) {
			return fmt.Errorf("unknown option %q (none, touch-required, verify-required)", v)
		}
	}
	return nil
}

// localUserKW is a local user name (AuthorizedKeysCommandUser); "none"
// means unset.
func localUserKW(name string, field func(*Config) *string) *keyword { return pathKW(name, field) }

// addrListKW is an address/CIDR pattern list (PerSourcePenaltyExemptList).
func addrListKW(name string, field func(*Config) *string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			if strings.EqualFold(a[0], "none") {
				*field(c) = ""
				return nil
			}
			if _, err := addrMatch("", a[0]); err != nil {
				return err
			}
			*field(c) = a[0]
			return nil
		},
		def:   func(c *Config) { *field(c) = "" },
		print: func(c *Config) [][]string { return [][]string{{noneIfEmpty(*field(c))}} }}
}

// logLevels are sshd's LogLevel names; DEBUG is DEBUG1.
var logLevels = []string{"QUIET", "FATAL", "ERROR", "INFO", "VERBOSE", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3"}

func logLevelKW() *keyword {
	return enumKW("LogLevel", DefaultLogLevel, func(c *Config) *string { return &c.LogLevel }, logLevels, nil)
}

// syslogFacilities are sshd's SyslogFacility names.
var syslogFacilities = []string{"DAEMON", "USER", "AUTH", "AUTHPRIV", "LOCAL0", "LOCAL1", "LOCAL2", "LOCAL3",
	"LOCAL4", "LOCAL5", "LOCAL6", "LOCAL7"}

func facilityKW() *keyword {
	return enumKW("SyslogFacility", DefaultSyslogFacility, func(c *Config) *string { return &c.SyslogFacility }, syslogFacilities, nil)
}

// octalKW is a file mode in octal (StreamLocalBindMask).
func octalKW(name string, def uint32, field func(*Config) *uint32) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			v, err := strconv.ParseUint(a[0], 8, 32)
			if err != nil || v > 0o777 {
				return fmt.Errorf("%q is not an octal mode of at most 0777", a[0])
			}
			*field(c) = uint32(v)
			return nil
		},
		def:   func(c *Config) { *field(c) = def },
		print: func(c *Config) [][]string { return [][]string{{fmt.Sprintf("0%o", *field(c))}} }}
}

func maxStartupsKW() *keyword {
	return &keyword{name: "MaxStartups", minArgs: 1, maxArgs: 1,
		set:   func(c *Config, a []string) (err error) { c.MaxStartups, err = ParseMaxStartups(a[0]); return err },
		def:   func(c *Config) { c.MaxStartups = DefaultMaxStartups },
		print: func(c *Config) [][]string { return [][]string{{c.MaxStartups.String()}} }}
}

func perSourceMaxKW() *keyword {
	return &keyword{name: "PerSourceMaxStartups", minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) (err error) {
			if a[0] == "none" {
				c.PerSourceMaxStartups = 0
				return nil
			}
			c.PerSourceMaxStartups, err = parseInt(a[0], 1, 1<<20)
			return err
		},
		def: func(c *Config) { c.PerSourceMaxStartups = 0 },
		print: func(c *Config) [][]string {
			if c.PerSourceMaxStartups == 0 {
				return [][]string{{"none"}}
			}
			return [][]string{{strconv.Itoa(c.PerSourceMaxStartups)}}
		}}
}

func netBlockKW() *keyword {
	return &keyword{name: "PerSourceNetBlockSize", minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			v4, v6, two := strings.Cut(a[0], ":")
			n4, err := parseInt(v4, 0, 32)
			if err != nil {
				return fmt.Errorf("%q: IPv4 mask %w", a[0], err)
			}
			n6 := 128
			if two {
				if n6, err = parseInt(v6, 0, 128); err != nil {
					return fmt.Errorf("%q: IPv6 mask %w", a[0], err)
				}
			}
			c.PerSourceNetBlockSize = [2]int{n4, n6}
			return nil
		},
		def: func(c *Config) { c.PerSourceNetBlockSize = [2]int{32, 128} },
		print: func(c *Config) [][]string {
			return [][]string{{fmt.Sprintf("%d:%d", c.PerSourceNetBlockSize[0], c.PerSourceNetBlockSize[1])}}
		}}
}

// penaltyKeys are the PerSourcePenalties settings taking a time.
var penaltyKeys = []string{"crash", "authfail", "noauth", "grace-exceeded", "refuseconnection", "invaliduser", "max", "min"}

func penaltiesKW() *keyword {
	return &keyword{name: "PerSourcePenalties", minArgs: 1, maxArgs: -1,
		set: func(c *Config, a []string) error {
			if len(a) == 1 && (a[0] == "no" || a[0] == "yes") {
				c.PerSourcePenalties = []string{a[0]}
				return nil
			}
			for _, v := range a {
				if err := checkPenalty(v); err != nil {
					return err
				}
			}
			c.PerSourcePenalties = slices.Clone(a)
			return nil
		},
		def:   func(c *Config) { c.PerSourcePenalties = []string{"yes"} },
		print: func(c *Config) [][]string { return [][]string{c.PerSourcePenalties} }}
}

func checkPenalty(v string) error {
	k, val, ok := strings.Cut(v, ":")
	switch {
	case !ok:
		return fmt.Errorf("%q: yes and no must appear alone; settings are key:value", v)
	case k == "max-sources4" || k == "max-sources6":
		_, err := parseInt(val, 1, 1<<30)
		return err
	case k == "overflow" || k == "overflow6":
		if val != "deny-all" && val != "permissive" {
			return fmt.Errorf("%q: overflow is deny-all or permissive", v)
		}
		return nil
	case slices.Contains(penaltyKeys, k):
		_, err := ParseTime(val)
		return err
	}
	return fmt.Errorf("unknown PerSourcePenalties setting %q", v)
}

// ipqosNames are the IPQoS names and their type-of-service bytes (the
// DSCP code point shifted into the top six bits; the last three are the
// old RFC 1349 TOS values). "none" leaves the socket's alone.
var ipqosNames = map[string]int{
	"af11": 0x28, "af12": 0x30, "af13": 0x38, "af21": 0x48, "af22": 0x50, "af23": 0x58,
	"af31": 0x68, "af32": 0x70, "af33": 0x78, "af41": 0x88, "af42": 0x90, "af43": 0x98,
	"cs0": 0x00, "cs1": 0x20, "cs2": 0x40, "cs3": 0x60, "cs4": 0x80, "cs5": 0xa0, "cs6": 0xc0, "cs7": 0xe0,
	"ef": 0xb8, "le": 0x04, "lowdelay": 0x10, "throughput": 0x08, "reliability": 0x04, "none": -1,
}

// TOS is an IPQoS value's type-of-service byte: a name of ipqosNames or
// a number from 0 to 255 (decimal, 0x hex or 0 octal); -1 for "none".
func TOS(v string) (int, error) {
	if t, ok := ipqosNames[strings.ToLower(v)]; ok {
		return t, nil
	}
	n, err := strconv.ParseUint(v, 0, 8)
	if err != nil {
		return 0, fmt.Errorf("bad IPQoS value %q", v)
	}
	return int(n), nil
}

func ipqosKW() *keyword {
	return &keyword{name: "IPQoS", minArgs: 1, maxArgs: 2,
		set: func(c *Config, a []string) error {
			for _, v := range a {
				if _, err := TOS(v); err != nil {
					return err
				}
			}
			c.IPQoS = [2]string{strings.ToLower(a[0]), strings.ToLower(a[len(a)-1])}
			return nil
		},
		def:   func(c *Config) { c.IPQoS = [2]string{"ef", "cs0"} },
		print: func(c *Config) [][]string { return [][]string{c.IPQoS[:]} }}
}

func rekeyKW() *keyword {
	return &keyword{name: "RekeyLimit", minArgs: 1, maxArgs: 2,
		set: func(c *Config, a []string) (err error) { c.RekeyLimit, err = parseRekeyLimit(a); return err },
		def: func(c *Config) { c.RekeyLimit = RekeyLimit{} },
		print: func(c *Config) [][]string {
			return [][]string{{strconv.FormatInt(c.RekeyLimit.Bytes, 10), formatSeconds(c.RekeyLimit.Interval)}}
		}}
}

// userEnvKW is PermitUserEnvironment: "yes", "no" (exactly, as sshd
// compares them) or a pattern list of the variable names accepted
// ("LANG,LC_*"), which also turns it on.
func userEnvKW() *keyword {
	return &keyword{name: "PermitUserEnvironment", minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			if a[0] == "" {
				return errors.New("missing argument")
			}
			c.PermitUserEnvironment, c.PermitUserEnvironmentList = a[0] != "no", nil
			if a[0] != "yes" && a[0] != "no" {
				c.PermitUserEnvironmentList = strings.Split(a[0], ",") // as sshd, unchecked
			}
			return nil
		},
		def: func(c *Config) { c.PermitUserEnvironment, c.PermitUserEnvironmentList = false, nil },
		print: func(c *Config) [][]string {
			if c.PermitUserEnvironmentList != nil {
				return [][]string{{strings.Join(c.PermitUserEnvironmentList, ",")}}
			}
			return [][]string{{formatBool(c.PermitUserEnvironment)}}
		}}
}

// xauthKW is XAuthLocation: the xauth program, or none for none (then
// X11 forwarding is refused, as by sshd).
func xauthKW() *keyword {
	kw := stringKW("XAuthLocation", connection.DefaultXAuthLocation, func(c *Config) *string { return &c.XAuthLocation })
	set := kw.set
	kw.set = func(c *Config, a []string) error {
		if strings.EqualFold(a[0], "none") {
			c.XAuthLocation = "none"
			return nil
		}
		return set(c, a)
	}
	return kw
}

// forceCommandKW is ForceCommand: the rest of the line, or none. A forced
// internal-sftp's flags are checked as Subsystem's are.
func forceCommandKW() *keyword {
	kw := commandKW("ForceCommand", false, func(c *Config) *string { return &c.ForceCommand })
	set := kw.set
	kw.set = func(c *Config, a []string) error {
		if f := strings.Fields(a[0]); len(f) > 0 && f[0] == InternalSFTP {
			words, err := sftp.SplitArgs(strings.TrimSpace(a[0]))
			if err != nil {
				return fmt.Errorf("internal-sftp: %w", err)
			}
			if err := checkInternalSFTP(words[1:]); err != nil {
				return err
			}
		}
		return set(c, a)
	}
	return kw
}

// setEnvKW is SetEnv: NAME=value words, the first line winning and, as in
// sshd, the first of a name on it (later ones are dropped).
func setEnvKW() *keyword {
	kw := wordsKW("SetEnv", "", func(c *Config) *[]string { return &c.SetEnv }, checkSetEnv)
	set := kw.set
	kw.set = func(c *Config, a []string) error {
		var keep []string
		seen := map[string]bool{}
		for _, v := range a {
			name, _, _ := strings.Cut(v, "=")
			if !seen[name] {
				seen[name] = true
				keep = append(keep, v)
			}
		}
		if len(keep) == 0 {
			keep = a // empty words: let the check refuse them
		}
		return set(c, keep)
	}
	return kw
}

// permitKW is PermitOpen (host:port) or PermitListen ([host:]port): "any"
// (stored as nil), "none", or entries; a bare PermitListen port is stored
// as "*:port", as sshd does.
func permitKW(name string, field func(*Config) *[]string, listen bool) *keyword {
	kw := wordsKW(name, "any", field, checkPermitOpen(listen))
	set := kw.set
	kw.set = func(c *Config, a []string) error {
		if err := set(c, a); err != nil || !listen {
			return err
		}
		for i, v := range *field(c) {
			if v != "none" && !strings.Contains(v, ":") {
				(*field(c))[i] = "*:" + v
			}
		}
		return nil
	}
	return kw
}

// maxWindow is the largest SSH channel window (uint32).
const maxWindow = 1<<32 - 1

// minWindow is the smallest window offload accepts: one maximum packet.
const minWindow = connection.DefaultMaxPacket

func channelWindowKW() *keyword {
	return &keyword{name: "ChannelWindowSize", minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
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
		},
		def: func(c *Config) { c.ChannelWindowSize = DefaultChannelWindowSize },
		print: func(c *Config) [][]string {
			if c.ChannelWindowSize == 0 {
				return [][]string{{"auto"}}
			}
			return [][]string{{strconv.FormatInt(c.ChannelWindowSize, 10)}}
		}}
}

func metricsKW() *keyword {
	return &keyword{name: "MetricsAddress", minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
			if strings.EqualFold(a[0], "none") {
				c.MetricsAddress = ""
				return nil
			}
			if err := checkHostPort(a[0]); err != nil {
				return err
			}
			c.MetricsAddress = a[0]
			return nil
		},
		def:   func(c *Config) { c.MetricsAddress = "" },
		print: func(c *Config) [][]string { return [][]string{{noneIfEmpty(c.MetricsAddress)}} }}
}

func calibrationCacheKW() *keyword {
	return &keyword{name: "CalibrationCache", minArgs: 1, maxArgs: 1,
		set: func(c *Config, a []string) error {
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
		},
		def:   func(c *Config) { c.CalibrationCache = "" },
		print: func(c *Config) [][]string { return [][]string{{defaultIfEmpty(c.CalibrationCache)}} }}
}
