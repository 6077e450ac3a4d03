package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/offload/offload/sshd/match"
	"github.com/offload/offload/sshd/transport"
)

// ConnInfo is what Match criteria are evaluated against: one connection,
// once its user name is known. An empty field (zero LocalPort) is
// unknown, and a criterion on it does not match, as in sshd -T -C.
type ConnInfo struct {
	User        string
	Host        string // the client's host name; its address with UseDNS no
	Addr        string // the client's IP address
	LocalAddr   string // the address the connection came in on
	LocalPort   int
	RDomain     string
	InvalidUser bool // the user does not exist (Match Invalid-User)
	// Groups are the user's group names. Nil means look them up in the
	// system's group database when a Match Group needs them.
	Groups []string
}

// matchLine is one parsed Match line.
type matchLine struct {
	file     string
	line     int
	criteria []criterion
}

type criterion struct {
	attr string // lower case: all, invalid-user, user, group, host, address, localaddress, localport, rdomain, version
	arg  string
	port int // localport
}

// matchAttrs are the Match criteria offload knows, as sshd 10 does.
var matchAttrs = []string{"user", "group", "host", "address", "localaddress", "localport", "rdomain", "version"}

// Errors of Match lines.
var (
	ErrBadMatch = errors.New("bad Match condition")
)

// parseMatch parses the arguments of a Match line, checking them as sshd
// does when it reads the file: known attributes, an argument for each,
// "all" alone, valid address lists and ports.
func parseMatch(args []string) ([]criterion, error) {
	var out []criterion
	for i := 0; i < len(args); i++ {
		attr := strings.ToLower(args[i])
		var arg string
		if k, _, ok := strings.Cut(attr, "="); ok && isMatchAttr(k) {
			attr, arg = k, args[i][len(k)+1:]
		}
		switch attr {
		case "all":
			if len(args) > 1 {
				return nil, fmt.Errorf("%w: 'all' cannot be combined with other Match attributes", ErrBadMatch)
			}
			return []criterion{{attr: "all"}}, nil
		case "invalid-user":
			out = append(out, criterion{attr: attr})
			continue
		}
		if !isMatchAttr(attr) {
			return nil, fmt.Errorf("%w: unsupported Match attribute %s", ErrBadMatch, args[i])
		}
		if arg == "" {
			if i+1 == len(args) || args[i+1] == "" {
				return nil, fmt.Errorf("%w: missing Match criteria for %s", ErrBadMatch, args[i])
			}
			i++
			arg = args[i]
		}
		c, err := checkCriterion(attr, arg)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadMatch, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: one or more attributes required for Match", ErrBadMatch)
	}
	return out, nil
}

func isMatchAttr(a string) bool {
	for _, m := range matchAttrs {
		if a == m {
			return true
		}
	}
	return false
}

// checkCriterion validates one criterion's pattern list.
func checkCriterion(attr, arg string) (criterion, error) {
	c := criterion{attr: attr, arg: arg}
	switch attr {
	case "localport":
		p, err := parseInt(arg, 1, 65535)
		if err != nil {
			return c, fmt.Errorf("invalid LocalPort %q", arg)
		}
		c.port = p
		return c, nil
	case "address", "localaddress":
		if _, err := addrMatch("", arg); err != nil {
			return c, fmt.Errorf("invalid Match %s argument %q: %w", attr, arg, err)
		}
		return c, nil
	}
	return c, checkPatternList(arg)
}

// checkPatternList refuses pattern lists with empty entries ("a,,b",
// "!"), which match nothing and are typing mistakes.
func checkPatternList(list string) error {
	for p := range strings.SplitSeq(list, ",") {
		if strings.TrimPrefix(p, "!") == "" {
			return fmt.Errorf("empty entry in pattern list %q", list)
		}
	}
	return nil
}

// addrMatch matches addr ("" to only check the list) against an address
// list: CIDR prefixes, addresses or wildcards, each optionally negated. An
// entry holding '/' must be a valid prefix without host bits.
func addrMatch(addr, list string) (bool, error) {
	for e := range strings.SplitSeq(list, ",") {
		e = strings.TrimPrefix(e, "!")
		if e == "" {
			return false, fmt.Errorf("empty entry in address list %q", list)
		}
		if err := checkNetwork(e); err != nil {
			return false, err
		}
	}
	a, _ := netip.ParseAddr(addr)
	switch match.Addrs(a.Unmap(), list) {
	case match.Matched:
		return true, nil
	case match.Bad:
		return false, fmt.Errorf("bad address list %q", list)
	}
	return false, nil
}

// checkNetwork refuses a network entry with a bad mask (a length too
// long for the family, or host bits set); other entries holding '/' are
// wildcard patterns, as sshd reads them (match.ParseNetwork).
func checkNetwork(e string) error {
	p, isNet, ok := match.ParseNetwork(e)
	switch {
	case !isNet || ok:
		return nil
	case !p.IsValid():
		return fmt.Errorf("bad network %q", e)
	}
	return fmt.Errorf("network %q has host bits set (inconsistent mask length)", e)
}

// eval reports whether the criteria all match ci. A nil ci is the
// reading of the file itself: then only "all" and Version can match, as
// in sshd. Group look-ups may fail; the error says why and the line does
// not match.
func (m *matchLine) eval(ci *ConnInfo) (bool, error) {
	for _, c := range m.criteria {
		ok, err := c.eval(ci)
		if err != nil {
			return false, fmt.Errorf("%s line %d: Match %s: %w", m.file, m.line, c.attr, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

func (c *criterion) eval(ci *ConnInfo) (bool, error) {
	switch c.attr {
	case "all":
		return true, nil
	case "version":
		return match.List(Version(), c.arg, false) == match.Matched, nil
	}
	if ci == nil {
		return false, nil
	}
	switch c.attr {
	case "invalid-user":
		return ci.InvalidUser, nil
	case "user":
		return ci.User != "" && match.List(ci.User, c.arg, false) == match.Matched, nil
	case "group":
		return c.evalGroup(ci)
	case "host":
		return ci.Host != "" && match.List(ci.Host, c.arg, true) == match.Matched, nil
	case "address":
		return ci.Addr != "" && must(addrMatch(ci.Addr, c.arg)), nil
	case "localaddress":
		return ci.LocalAddr != "" && must(addrMatch(ci.LocalAddr, c.arg)), nil
	case "localport":
		return ci.LocalPort == c.port, nil
	case "rdomain":
		return ci.RDomain != "" && match.List(ci.RDomain, c.arg, false) == match.Matched, nil
	}
	return false, fmt.Errorf("unknown attribute %q", c.attr)
}

// must drops the error of a list checked when the file was read.
func must(ok bool, _ error) bool { return ok }

// evalGroup is sshd's group match: a negated group entry matching any of
// the user's groups decides "no"; otherwise any group matching decides
// "yes". An unknown user matches no group.
func (c *criterion) evalGroup(ci *ConnInfo) (bool, error) {
	if ci.User == "" || ci.InvalidUser {
		return false, nil
	}
	groups := ci.Groups
	if groups == nil {
		var err error
		if groups, err = LookupGroups(ci.User); err != nil {
			return false, err
		}
	}
	found := false
	for _, g := range groups {
		switch match.List(g, c.arg, false) {
		case match.Negated:
			return false, nil
		case match.Matched:
			found = true
		}
	}
	return found, nil
}

// Group look-up bounds: the system's group database can be large, slow
// (LDAP through NSS) or broken; none of that may hang or end the server.
const (
	maxGroups          = 65536
	groupLookupTimeout = 10 * time.Second
)

// LookupGroups returns the names of user's groups, primary first, from
// the system's databases (os/user); a user that does not exist is in no
// group. It gives up after a timeout and turns a panic inside the look-up
// (bad NSS data) into an error.
func LookupGroups(name string) ([]string, error) {
	type result struct {
		groups []string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("group look-up for %q failed: %v", name, r)}
			}
		}()
		g, err := lookupGroups(name)
		done <- result{g, err}
	}()
	select {
	case r := <-done:
		return r.groups, r.err
	case <-time.After(groupLookupTimeout):
		return nil, fmt.Errorf("group look-up for %q took longer than %v", name, groupLookupTimeout)
	}
}

func lookupGroups(name string) ([]string, error) {
	u, err := user.Lookup(name)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		return []string{}, nil // no such user: in no group, as in sshd
	}
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	if len(ids) > maxGroups {
		return nil, fmt.Errorf("user %q is in more than %d groups", name, maxGroups)
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil {
			out = append(out, g.Name)
		}
	}
	return out, nil
}

// Version is the software version Match Version is matched against:
// offload's identification string without "SSH-2.0-".
func Version() string { return strings.TrimPrefix(transport.DefaultVersion, "SSH-2.0-") }

// ParseConnSpec parses sshd's -C connection specification:
// comma-separated user=, host=, addr=, laddr=, lport=, rdomain= and
// invalid-user.
func ParseConnSpec(spec string) (ConnInfo, error) {
	var ci ConnInfo
	for p := range strings.SplitSeq(spec, ",") {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case p == "":
			// an empty field ("user=x," or "a,,b"): skipped, as sshd -C does
		case p == "invalid-user":
			ci.InvalidUser = true
		case !ok:
			return ci, fmt.Errorf("config: invalid connection specification %q (want user=, host=, addr=, laddr=, lport=, rdomain= or invalid-user)", p)
		case k == "user":
			ci.User = v
		case k == "host":
			ci.Host = v
		case k == "addr":
			ci.Addr = v
		case k == "laddr":
			ci.LocalAddr = v
		case k == "rdomain":
			ci.RDomain = v
		case k == "lport":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				return ci, fmt.Errorf("config: invalid port %q in connection specification %q", v, p)
			}
			ci.LocalPort = n
		default:
			return ci, fmt.Errorf("config: invalid connection specification %q (want user=, host=, addr=, laddr=, lport=, rdomain= or invalid-user)", p)
		}
	}
	return ci, nil
}

func (m *matchLine) needsGroups() bool {
	for _, c := range m.criteria {
		if c.attr == "group" {
			return true
		}
	}
	return false
}
