package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const matchConfig = `
MaxSessions 10
Banner /etc/global
AllowTcpForwarding yes
AcceptEnv LANG

Match User alice,!alice-guest
	MaxSessions 2
	AcceptEnv LC_*
Match User bob Address 192.0.2.0/24
	AllowTcpForwarding no
	MaxSessions 3
Match Address 198.51.100.7,2001:db8::/32
	Banner /etc/external
	MaxSessions 4
Match Host *.example.org
	MaxAuthTries 2
Match LocalAddress 127.0.0.1 LocalPort 2222
	ClientAliveInterval 5
Match Group admins,!contractors
	PermitRootLogin yes
Match Invalid-User
	MaxAuthTries 1
Match RDomain blue
	ChannelWindowSize 4M
Match Address !10.1.2.3,10.0.0.0/8
	ClientAliveCountMax 9
`

// TestForConnection ports the idea of OpenSSH's regress cfgmatch: Match
// blocks apply to the connections they name and only to them; criteria
// on one line all must hold; negation excludes; the first matching value
// wins; a block's value replaces the global one, lists included.
func TestForConnection(t *testing.T) {
	c := parse(t, matchConfig)
	if !c.HasMatch() || c.MaxSessions != 10 || c.Banner != "/etc/global" {
		t.Fatalf("global: %d %q", c.MaxSessions, c.Banner)
	}
	cases := []struct {
		name string
		ci   ConnInfo
		test func(*Config) bool
	}{
		{"no match", ConnInfo{User: "carol", Addr: "203.0.113.1", Host: "203.0.113.1"}, func(e *Config) bool { return e == c }},
		{"user", ConnInfo{User: "alice", Addr: "203.0.113.1"}, func(e *Config) bool {
			return e.MaxSessions == 2 && slices.Equal(e.AcceptEnv, []string{"LC_*"}) && e.Banner == "/etc/global"
		}},
		{"negated user", ConnInfo{User: "alice-guest", Addr: "203.0.113.1"}, func(e *Config) bool { return e == c }},
		{"user and address", ConnInfo{User: "bob", Addr: "192.0.2.9"}, func(e *Config) bool {
			return e.AllowTCPForwarding == "no" && e.MaxSessions == 3
		}},
		{"user, other address", ConnInfo{User: "bob", Addr: "192.0.3.9"}, func(e *Config) bool { return e == c }},
		{"first block wins", ConnInfo{User: "alice", Addr: "198.51.100.7"}, func(e *Config) bool {
			return e.MaxSessions == 2 && e.Banner == "/etc/external"
		}},
		{"IPv6 CIDR", ConnInfo{User: "carol", Addr: "2001:db8::1"}, func(e *Config) bool { return e.Banner == "/etc/external" && e.MaxSessions == 4 }},
		{"host pattern, case-insensitive", ConnInfo{User: "carol", Host: "WWW.Example.ORG"}, func(e *Config) bool { return e.MaxAuthTries == 2 }},
		{"local address and port", ConnInfo{User: "carol", LocalAddr: "127.0.0.1", LocalPort: 2222}, func(e *Config) bool {
			return e.ClientAliveInterval == 5e9
		}},
		{"local port differs", ConnInfo{User: "carol", LocalAddr: "127.0.0.1", LocalPort: 22}, func(e *Config) bool { return e == c }},
		{"group", ConnInfo{User: "dave", Groups: []string{"users", "admins"}}, func(e *Config) bool { return e.PermitRootLogin == "yes" }},
		{"negated group", ConnInfo{User: "dave", Groups: []string{"admins", "contractors"}}, func(e *Config) bool { return e == c }},
		{"invalid user", ConnInfo{User: "nobody-here", InvalidUser: true, Groups: []string{}}, func(e *Config) bool { return e.MaxAuthTries == 1 }},
		{"rdomain", ConnInfo{User: "carol", RDomain: "blue"}, func(e *Config) bool { return e.ChannelWindowSize == 4<<20 }},
		{"address negation wins", ConnInfo{User: "carol", Addr: "10.1.2.3"}, func(e *Config) bool { return e == c }},
		{"address in network", ConnInfo{User: "carol", Addr: "10.9.9.9"}, func(e *Config) bool { return e.ClientAliveCountMax == 9 }},
	}
	for _, tc := range cases {
		e, err := c.ForConnection(tc.ci)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !tc.test(e) {
			t.Errorf("%s: effective MaxSessions %d Banner %q AcceptEnv %v Forwarding %s MaxAuthTries %d PermitRootLogin %s",
				tc.name, e.MaxSessions, e.Banner, e.AcceptEnv, e.AllowTCPForwarding, e.MaxAuthTries, e.PermitRootLogin)
		}
	}
	if c.MaxSessions != 10 {
		t.Error("ForConnection changed the global configuration")
	}
}

// TestMatchOverridesCommandLine: as in sshd, a Match block's value wins
// over -o for the connections it matches; -o still wins over the file.
func TestMatchOverridesCommandLine(t *testing.T) {
	c := parse(t, "MaxSessions 3\nMatch User alice\n MaxSessions 7\n", "MaxSessions=5")
	if c.MaxSessions != 5 {
		t.Errorf("global MaxSessions %d, want the -o value 5", c.MaxSessions)
	}
	a, _ := c.ForConnection(ConnInfo{User: "alice"})
	b, _ := c.ForConnection(ConnInfo{User: "bob"})
	if a.MaxSessions != 7 || b.MaxSessions != 5 {
		t.Errorf("alice %d (want 7), bob %d (want 5)", a.MaxSessions, b.MaxSessions)
	}
}

// TestMatchAllAfterBlocks: Match all applies everywhere, and sshd applies
// its values per connection over the earlier global ones.
func TestMatchAllAfterBlocks(t *testing.T) {
	c := parse(t, "MaxSessions 3\nMatch User alice\n MaxAuthTries 2\nMatch all\n MaxSessions 7\n")
	if c.MaxSessions != 3 {
		t.Errorf("global MaxSessions %d", c.MaxSessions)
	}
	e, _ := c.ForConnection(ConnInfo{User: "bob"})
	if e.MaxSessions != 7 || e.MaxAuthTries != 6 {
		t.Errorf("bob: MaxSessions %d MaxAuthTries %d", e.MaxSessions, e.MaxAuthTries)
	}
}

// TestMatchSubsystemReplaces: a Subsystem in a matching block replaces the
// global ones (sshd 10 copies the block's list).
func TestMatchSubsystemReplaces(t *testing.T) {
	c := parse(t, "Subsystem sftp internal-sftp\nSubsystem x /bin/x\nMatch User alice\n Subsystem sftp /usr/lib/openssh/sftp-server\n")
	e, _ := c.ForConnection(ConnInfo{User: "alice"})
	if e.Subsystem("sftp") != "/usr/lib/openssh/sftp-server" || e.Subsystem("x") != "" || c.Subsystem("x") != "/bin/x" {
		t.Errorf("subsystems %v (global %v)", e.Subsystems, c.Subsystems)
	}
}

// TestMatchUnknownAttributes: in -T -C style (fields left empty) a
// criterion on an unknown attribute does not match.
func TestMatchUnknownAttributes(t *testing.T) {
	c := parse(t, "Match Address 0.0.0.0/0\n MaxSessions 1\nMatch LocalPort 22\n MaxSessions 2\nMatch Group *\n MaxSessions 3\n")
	e, err := c.ForConnection(ConnInfo{})
	if err != nil || e != c {
		t.Errorf("empty ConnInfo matched: %v %v", e.MaxSessions, err)
	}
}

func TestMatchVersion(t *testing.T) {
	c := parse(t, "Match Version offload_*\n MaxSessions 1\nMatch Version OpenSSH_*\n MaxAuthTries 1\n")
	if c.MaxSessions != 1 || c.MaxAuthTries != 6 {
		t.Errorf("Match Version: MaxSessions %d MaxAuthTries %d", c.MaxSessions, c.MaxAuthTries)
	}
}

// TestMatchGroupLookup uses the system's database: root is in group root
// on every Linux system.
func TestMatchGroupLookup(t *testing.T) {
	g, err := LookupGroups("root")
	if err != nil || !slices.Contains(g, "root") {
		t.Skipf("no root group here: %v %v", g, err)
	}
	c := parse(t, "Match Group root\n MaxSessions 1\n")
	e, err := c.ForConnection(ConnInfo{User: "root"})
	if err != nil || e.MaxSessions != 1 {
		t.Errorf("Match Group root for root: %d %v", e.MaxSessions, err)
	}
	e, err = c.ForConnection(ConnInfo{User: "no-such-user-offload-test"})
	if e != c || err != nil {
		t.Errorf("unknown user: %v %v", e.MaxSessions, err)
	}
}

func TestMatchEqualsSyntax(t *testing.T) {
	c := parse(t, "Match User=alice Address=10.0.0.0/8\n MaxSessions 1\n")
	if e, _ := c.ForConnection(ConnInfo{User: "alice", Addr: "10.0.0.1"}); e.MaxSessions != 1 {
		t.Errorf("User=: %d", e.MaxSessions)
	}
}

func TestParseConnSpec(t *testing.T) {
	ci, err := ParseConnSpec("user=alice,host=h.example,addr=192.0.2.1,laddr=127.0.0.1,lport=2222,rdomain=blue,invalid-user")
	want := ConnInfo{User: "alice", Host: "h.example", Addr: "192.0.2.1", LocalAddr: "127.0.0.1", LocalPort: 2222, RDomain: "blue", InvalidUser: true}
	if err != nil || ci.User != want.User || ci.Host != want.Host || ci.Addr != want.Addr || ci.LocalAddr != want.LocalAddr ||
		ci.LocalPort != want.LocalPort || ci.RDomain != want.RDomain || !ci.InvalidUser {
		t.Errorf("ParseConnSpec = %+v, %v", ci, err)
	}
	// empty fields are skipped, as sshd -C does (servcfginclude, cfgmatch)
	for _, spec := range []string{"user=alice,", "user=alice,,addr=192.0.2.1", ",user=alice"} {
		if ci, err := ParseConnSpec(spec); err != nil || ci.User != "alice" {
			t.Errorf("ParseConnSpec(%q) = %+v, %v", spec, ci, err)
		}
	}
	for _, bad := range []string{"lport=x", "colour=blue", "user"} {
		if _, err := ParseConnSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestMatchErrorsNameLine(t *testing.T) {
	err := parseErr("Port 22\nMatch User alice\n\tPort 2222\n")
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !errors.Is(err, ErrNotInMatch) {
		t.Errorf("Port in Match: %v", err)
	}
	err = parseErr("Match User alice\n\tRekeyLimit 1G\n")
	if !errors.Is(err, ErrNotImplemented) || !strings.Contains(err.Error(), "RekeyLimit inside a Match block") {
		t.Errorf("RekeyLimit in Match: %v", err)
	}
}

// FuzzMatch parses Match criteria and evaluates them against a connection:
// no panic, and whatever parses evaluates without error when groups are
// given.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{"User alice", "User=a* Address 10.0.0.0/8", "all", "Group !x,y", "LocalPort 22",
		"Host *.example.org,!bad.example.org", "Invalid-User", "Address ::1,fe80::/10", "RDomain r*", "Version offload_*"} {
		f.Add(s, "alice", "10.1.2.3")
	}
	f.Fuzz(func(t *testing.T, criteria, user, addr string) {
		_, args, err := ParseLine("Match " + criteria)
		if err != nil {
			return
		}
		crit, err := parseMatch(args)
		if err != nil {
			return
		}
		m := &matchLine{file: "fuzz", line: 1, criteria: crit}
		ci := &ConnInfo{User: user, Addr: addr, Host: addr, LocalAddr: addr, LocalPort: 22, Groups: []string{user}}
		if _, err := m.eval(ci); err != nil {
			t.Fatalf("%q: %v", criteria, err)
		}
		m.eval(nil)
	})
}
