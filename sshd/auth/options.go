package auth

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/offload/offload/sshd/match"
	"github.com/offload/offload/sshd/perm"
)

// keyOptions are the options of one authorized_keys (or principals) line,
// as in sshd(8) AUTHORIZED_KEYS FILE FORMAT.
type keyOptions struct {
	certAuthority bool
	command       *string
	environment   []string
	from          []string // each a pattern list; all must match
	expiry        *time.Time
	permitOpen    []string
	permitListen  []string
	principals    []string // nil: not given
	verify        bool     // verify-required
	noTouch       bool     // no-touch-required

	noPTY, noPortForwarding, noAgentForwarding, noX11Forwarding, noUserRC bool
}

// OptionError is an authorized_keys option that offload does not accept;
// the line carrying it is ignored.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("auth: option %s: %v", quote(e.Option), e.Err)
}

func (e *OptionError) Unwrap() error { return e.Err }

var (
	errUnknownOption = errors.New("unknown or unsupported option")
	errOptionValue   = errors.New("malformed value")
	errNeedsValue    = errors.New("needs a quoted value")
	errNoValue       = errors.New("takes no value")
)

// parseOptions interprets the options of a line in order (so "restrict,pty"
// re-enables a PTY). Names are case-insensitive, as in OpenSSH.
func parseOptions(opts []string) (*keyOptions, error) {
	o := &keyOptions{}
	for _, raw := range opts {
		if err := o.apply(raw); err != nil {
			return nil, &OptionError{Option: raw, Err: err}
		}
	}
	return o, nil
}

func (o *keyOptions) apply(raw string) error {
	name, value, hasValue, err := splitOption(raw)
	if err != nil {
		return err
	}
	name = strings.ToLower(name)
	if flag := o.flag(name); flag != nil {
		if hasValue {
			return errNoValue
		}
		*flag.field = flag.set
		return nil
	}
	if name == "restrict" {
		if hasValue {
			return errNoValue
		}
		o.restrict()
		return nil
	}
	if !hasValue {
		return errUnknownOption
	}
	return o.applyValue(name, value)
}

type flagOption struct {
	field *bool
	set   bool
}

// flag returns the boolean an option without value sets, or nil.
func (o *keyOptions) flag(name string) *flagOption {
	switch name {
	case "cert-authority":
		return &flagOption{&o.certAuthority, true}
	case "verify-required":
		return &flagOption{&o.verify, true}
	case "no-touch-required":
		return &flagOption{&o.noTouch, true}
	}
	return o.permitFlag(name)
}

func (o *keyOptions) permitFlag(name string) *flagOption {
	fields := map[string]*bool{
		"pty": &o.noPTY, "port-forwarding": &o.noPortForwarding,
		"agent-forwarding": &o.noAgentForwarding, "x11-forwarding": &o.noX11Forwarding,
		"user-rc": &o.noUserRC,
	}
	if f, ok := fields[strings.TrimPrefix(name, "no-")]; ok {
		return &flagOption{f, strings.HasPrefix(name, "no-")}
	}
	return nil
}

// restrict turns off every permission; later options may re-enable some.
func (o *keyOptions) restrict() {
	o.noPTY, o.noPortForwarding, o.noAgentForwarding = true, true, true
	o.noX11Forwarding, o.noUserRC = true, true
}

func (o *keyOptions) applyValue(name, value string) error {
	switch name {
	case "command":
		if value == "" {
			return fmt.Errorf("%w: empty command", errOptionValue)
		}
		o.command = &value
	case "environment":
		return o.addEnvironment(value)
	case "from":
		return o.addFrom(value)
	case "expiry-time":
		return o.setExpiry(value)
	case "permitopen":
		return o.addPermitOpen(value)
	case "permitlisten":
		return o.addPermitListen(value)
	case "principals":
		return o.addPrincipals(value)
	default:
		return errUnknownOption
	}
	return nil
}

func (o *keyOptions) addEnvironment(v string) error {
	name, _, ok := strings.Cut(v, "=")
	if !ok || !validEnvName(name) {
		return fmt.Errorf("%w: environment must be NAME=value", errOptionValue)
	}
	o.environment = append(o.environment, v)
	return nil
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (o *keyOptions) addFrom(v string) error {
	if v == "" {
		return fmt.Errorf("%w: empty from=", errOptionValue)
	}
	o.from = append(o.from, v)
	return nil
}

// addPermitOpen accepts host:port where port is a number or '*' and an
// IPv6 host is in brackets.
func (o *keyOptions) addPermitOpen(v string) error {
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return fmt.Errorf("%w: permitopen must be host:port", errOptionValue)
	}
	host, port := v[:i], v[i+1:]
	if strings.HasPrefix(host, "[") != strings.HasSuffix(host, "]") || host == "[]" {
		return fmt.Errorf("%w: permitopen host %s", errOptionValue, quote(host))
	}
	if n, err := strconv.ParseUint(port, 10, 16); port != "*" && (err != nil || n == 0) {
		return fmt.Errorf("%w: permitopen port %s", errOptionValue, quote(port))
	}
	o.permitOpen = append(o.permitOpen, v)
	return nil
}

// addPermitListen accepts [host:]port as OpenSSH does: a bare port means
// any listen host ("*:port"); the port is a number or '*'.
func (o *keyOptions) addPermitListen(v string) error {
	if !strings.Contains(v, ":") {
		v = "*:" + v
	}
	i := strings.LastIndexByte(v, ':')
	host, port := v[:i], v[i+1:]
	if host == "" || strings.HasPrefix(host, "[") != strings.HasSuffix(host, "]") || host == "[]" {
		return fmt.Errorf("%w: permitlisten host %s", errOptionValue, quote(host))
	}
	if n, err := strconv.ParseUint(port, 10, 16); port != "*" && (err != nil || n == 0) {
		return fmt.Errorf("%w: permitlisten port %s", errOptionValue, quote(port))
	}
	o.permitListen = append(o.permitListen, v)
	return nil
}

func (o *keyOptions) addPrincipals(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p == "" {
			return fmt.Errorf("%w: empty principal", errOptionValue)
		}
		o.principals = append(o.principals, p)
	}
	return nil
}

// setExpiry parses YYYYMMDD[HHMM[SS]] in local time, or in UTC with a
// trailing Z, as OpenSSH does.
func (o *keyOptions) setExpiry(v string) error {
	t, err := parseExpiry(v)
	if err != nil {
		return err
	}
	if o.expiry == nil || t.Before(*o.expiry) {
		o.expiry = &t
	}
	return nil
}

func parseExpiry(v string) (time.Time, error) {
	loc := time.Local
	if s, ok := strings.CutSuffix(v, "Z"); ok {
		v, loc = s, time.UTC
	}
	layouts := map[int]string{8: "20060102", 12: "200601021504", 14: "20060102150405"}
	layout, ok := layouts[len(v)]
	if !ok || strings.Trim(v, "0123456789") != "" {
		return time.Time{}, fmt.Errorf("%w: expiry-time must be YYYYMMDD[HHMM[SS]][Z]", errOptionValue)
	}
	t, err := time.ParseInLocation(layout, v, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: expiry-time: %w", errOptionValue, err)
	}
	return t, nil
}

// splitOption splits name="value", undoing the quoting: the value must be
// in double quotes, in which \" stands for a quote. Other backslashes are
// kept, as in OpenSSH.
func splitOption(raw string) (name, value string, hasValue bool, err error) {
	name, quoted, hasValue := strings.Cut(raw, "=")
	if name == "" {
		return "", "", false, errUnknownOption
	}
	if !hasValue {
		return name, "", false, nil
	}
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return "", "", false, errNeedsValue
	}
	value, err = unquote(quoted[1 : len(quoted)-1])
	return name, value, true, err
}

func unquote(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			b.WriteByte('"')
			i++
		case s[i] == '"':
			return "", fmt.Errorf("%w: unescaped quote", errOptionValue)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// allows checks the options that depend on the connection: from= and
// expiry-time=. The error says which failed.
func (o *keyOptions) allows(addr netip.Addr, now time.Time) error {
	for _, f := range o.from {
		if !match.HostAndIP("", addr, f) {
			return reject(fmt.Sprintf("client address %s not in from=%s", addr, quote(f)))
		}
	}
	if o.expiry != nil && now.After(*o.expiry) {
		return reject("key expired at " + o.expiry.Format(time.RFC3339))
	}
	return nil
}

// permissions converts the options into perm.Permissions for user.
func (o *keyOptions) permissions(user string, keepEnv bool) *perm.Permissions {
	p := &perm.Permissions{User: user, PermitOpen: o.permitOpen, PermitListen: o.permitListen,
		NoPTY: o.noPTY, NoPortForwarding: o.noPortForwarding, NoAgentForwarding: o.noAgentForwarding,
		NoX11Forwarding: o.noX11Forwarding, NoUserRC: o.noUserRC}
	if o.command != nil {
		p.ForceCommand = *o.command
	}
	if keepEnv {
		p.Environment = o.environment
	}
	return p
}
