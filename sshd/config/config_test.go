package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offload/offload/provider"
)

func parse(t *testing.T, text string, overrides ...string) *Config {
	t.Helper()
	c, err := Parse("test_config", strings.NewReader(text), overrides)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func parseErr(text string) error {
	_, err := Parse("f", strings.NewReader(text), nil)
	return err
}

func printed(c *Config) string {
	var out strings.Builder
	c.Print(&out)
	return out.String()
}

func TestDefaults(t *testing.T) {
	c := Defaults()
	if !reflect.DeepEqual(c.Ports, []int{22}) || c.MaxAuthTries != 6 || c.MaxSessions != 10 ||
		c.LoginGraceTime != 2*time.Minute || c.ClientAliveCountMax != 3 || c.ClientAliveInterval != 0 {
		t.Errorf("numeric defaults wrong: %+v", c)
	}
	if !c.PubkeyAuthentication || !c.StrictModes || !c.PasswordAuthentication || c.KbdInteractiveAuthentication ||
		c.UsePAM || c.PAMServiceName != "sshd" || c.PermitRootLogin != "prohibit-password" {
		t.Errorf("auth defaults wrong: %+v", c)
	}
	if c.MaxStartups != (MaxStartups{10, 30, 100}) || c.ChannelWindowSize != 0 || c.LogLevel != "INFO" || c.SyslogFacility != "AUTH" {
		t.Errorf("defaults wrong: %+v", c)
	}
	if c.Subsystem("sftp") != InternalSFTP || c.AllowTCPForwarding != "yes" {
		t.Errorf("subsystem/forwarding defaults wrong: %+v", c)
	}
	if !slices.Equal(c.HostKeys, DefaultHostKeys) || !slices.Equal(c.AuthorizedKeysFile, []string{".ssh/authorized_keys", ".ssh/authorized_keys2"}) {
		t.Errorf("file defaults (sshd's) wrong: %v %v", c.HostKeys, c.AuthorizedKeysFile)
	}
	// Session and forwarding defaults are OpenSSH's.
	if c.X11Forwarding || !c.AllowAgentForwarding || !c.PrintMotd || c.AllowStreamLocalForwarding != "yes" || !c.PermitTTY ||
		!c.PermitUserRC || c.XAuthLocation != "/usr/bin/xauth" || c.X11DisplayOffset != 10 || !c.X11UseLocalhost ||
		c.StreamLocalBindMask != 0o177 || c.GatewayPorts != "no" || c.PermitOpen != nil || c.PermitListen != nil ||
		c.ForceCommand != "" || c.SetEnv != nil || c.ChannelTimeout != nil || c.UnusedConnectionTimeout != 0 {
		t.Errorf("session and forwarding defaults wrong: %+v", c)
	}
	// Refused features default to what offload does: off.
	if c.PermitTunnel != "no" || c.ExposeAuthInfo {
		t.Errorf("refused defaults wrong: %+v", c)
	}
	if c.Compression != "yes" {
		t.Errorf("Compression default %q, want OpenSSH's yes", c.Compression)
	}
	if slices.Contains(c.KexAlgorithms, "ecdh-sha2-nistp256") || c.KexAlgorithms[0] != "mlkem768x25519-sha256" {
		t.Errorf("kex defaults = %v", c.KexAlgorithms)
	}
	if c.IsSet("Port") || c.HasMatch() {
		t.Error("IsSet(Port) or HasMatch on defaults")
	}
	if got := c.Addrs(); !reflect.DeepEqual(got, []string{":22"}) {
		t.Errorf("Addrs = %v", got)
	}
	empty := parse(t, "# nothing\n\n   \n")
	if printed(empty) != printed(c) {
		t.Errorf("empty file differs from Defaults")
	}
}

func TestSupportedKeywords(t *testing.T) {
	text := `
port 2222
Port=2223
AddressFamily inet
ListenAddress 127.0.0.1
ListenAddress [::1]:2200
HostKey /etc/ssh/key
HostKey "pkcs11:token=offload;object=host%20key?module-path=/usr/lib/softhsm/libsofthsm2.so"
AuthorizedKeysFile .ssh/authorized_keys /etc/keys/%u
TrustedUserCAKeys /etc/ssh/ca.pub
AuthorizedPrincipalsFile /etc/ssh/principals/%u
RevokedKeys /etc/ssh/revoked
PermitUserEnvironment yes
PubkeyAcceptedAlgorithms -sk-*,*-cert-v01@openssh.com
CASignatureAlgorithms ssh-ed25519
TCPKeepAlive no
Ciphers aes128-gcm@openssh.com,chacha20-poly1305@openssh.com
KexAlgorithms +ecdh-sha2-nistp256
MACs -hmac-sha2-512*
HostKeyAlgorithms ^rsa-sha2-256
PubkeyAuthentication no
StrictModes no
PermitRootLogin without-password
AllowUsers alice bob
AllowUsers carol
MaxStartups 5:50:20
MaxAuthTries 3
MaxSessions 4
LoginGraceTime 1h30m
ClientAliveInterval 15
ClientAliveCountMax 5
Subsystem sftp internal-sftp
Subsystem backup /usr/bin/backup --serve
AcceptEnv LANG LC_*
AllowTcpForwarding local
DisableForwarding yes
Banner /etc/issue.net
PidFile /run/offload.pid
LogLevel debug2
SyslogFacility local3
VersionAddendum managed by ops
RekeyLimit 1G 1h
PKCS11Module /usr/lib/softhsm/libsofthsm2.so
PKCS11Token pkcs11:token=offload
PKCS11PinSource /etc/offload/pin
CryptoPolicy prefer-hardware
CryptoProfile default
ProviderMap aes128-gcm=cpu,ed25519=software
ProviderMap aes128-gcm=software x25519=software
ProviderDeny aes128-ctr chacha20=software
ChannelWindowSize 32M
MetricsAddress 127.0.0.1:9100
CalibrationCache /var/cache/offload
`
	c := parse(t, text)
	checks := []struct {
		name      string
		got, want any
	}{
		{"Ports", c.Ports, []int{2222, 2223}},
		{"AddressFamily", c.AddressFamily, "inet"},
		{"ListenAddresses", c.ListenAddresses, []string{"127.0.0.1", "[::1]:2200"}},
		{"HostKeys", c.HostKeys, []string{"/etc/ssh/key", "pkcs11:token=offload;object=host%20key?module-path=/usr/lib/softhsm/libsofthsm2.so"}},
		{"AuthorizedKeysFile", c.AuthorizedKeysFile, []string{".ssh/authorized_keys", "/etc/keys/%u"}},
		{"TrustedUserCAKeys", c.TrustedUserCAKeys, "/etc/ssh/ca.pub"},
		{"AuthorizedPrincipalsFile", c.AuthorizedPrincipalsFile, "/etc/ssh/principals/%u"},
		{"RevokedKeys", c.RevokedKeys, "/etc/ssh/revoked"},
		{"PermitUserEnvironment", c.PermitUserEnvironment, true},
		{"PubkeyAcceptedAlgorithms", c.PubkeyAcceptedAlgorithms, []string{"ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
			"ecdsa-sha2-nistp521", "rsa-sha2-512", "rsa-sha2-256"}},
		{"CASignatureAlgorithms", c.CASignatureAlgorithms, []string{"ssh-ed25519"}},
		{"TCPKeepAlive", c.TCPKeepAlive, false},
		{"Ciphers", c.Ciphers, []string{"aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com"}},
		{"KexAlgorithms", c.KexAlgorithms, append(DefaultAlgorithms(KexList), "ecdh-sha2-nistp256")},
		{"MACs", c.MACs, slices.DeleteFunc(DefaultAlgorithms(MACList), func(n string) bool { return strings.HasPrefix(n, "hmac-sha2-512") })},
		{"HostKeyAlgorithms", c.HostKeyAlgorithms, append([]string{"rsa-sha2-256"},
			slices.DeleteFunc(DefaultAlgorithms(HostKeyAlgList), func(n string) bool { return n == "rsa-sha2-256" })...)},
		{"PubkeyAuthentication", c.PubkeyAuthentication, false},
		{"StrictModes", c.StrictModes, false},
		{"PermitRootLogin", c.PermitRootLogin, "prohibit-password"},
		{"AllowUsers", c.AllowUsers, []string{"alice", "bob", "carol"}},
		{"MaxStartups", c.MaxStartups, MaxStartups{5, 50, 20}},
		{"MaxAuthTries", c.MaxAuthTries, 3},
		{"MaxSessions", c.MaxSessions, 4},
		{"LoginGraceTime", c.LoginGraceTime, 90 * time.Minute},
		{"ClientAliveInterval", c.ClientAliveInterval, 15 * time.Second},
		{"ClientAliveCountMax", c.ClientAliveCountMax, 5},
		{"Subsystems", c.Subsystems, []Subsystem{{"sftp", "internal-sftp"}, {"backup", "/usr/bin/backup --serve"}}},
		{"AcceptEnv", c.AcceptEnv, []string{"LANG", "LC_*"}},
		{"AllowTCPForwarding", c.AllowTCPForwarding, "local"},
		{"DisableForwarding", c.DisableForwarding, true},
		{"Banner", c.Banner, "/etc/issue.net"},
		{"PidFile", c.PidFile, "/run/offload.pid"},
		{"LogLevel", c.LogLevel, "DEBUG2"},
		{"SyslogFacility", c.SyslogFacility, "LOCAL3"},
		{"VersionAddendum", c.VersionAddendum, "managed by ops"},
		{"RekeyLimit", c.RekeyLimit, RekeyLimit{Bytes: 1 << 30, Interval: time.Hour}},
		{"PKCS11Module", c.PKCS11Module, "/usr/lib/softhsm/libsofthsm2.so"},
		{"PKCS11Tokens", c.PKCS11Tokens, []string{"pkcs11:token=offload"}},
		{"PKCS11PinSource", c.PKCS11PinSource, "/etc/offload/pin"},
		{"CryptoPolicy", c.CryptoPolicy, provider.ModePreferHardware},
		{"ProviderMap", c.ProviderMap, map[string]string{"aes128-gcm": "cpu", "ed25519": "software", "x25519": "software"}},
		{"ProviderDeny", c.ProviderDeny, []provider.DenyEntry{{Algorithm: "aes128-ctr"}, {Algorithm: "chacha20", Provider: "software"}}},
		{"ChannelWindowSize", c.ChannelWindowSize, int64(32 << 20)},
		{"MetricsAddress", c.MetricsAddress, "127.0.0.1:9100"},
		{"CalibrationCache", c.CalibrationCache, "/var/cache/offload"},
	}
	for _, ck := range checks {
		if !reflect.DeepEqual(ck.got, ck.want) {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	wantAddrs := []string{"127.0.0.1:2222", "127.0.0.1:2223", "[::1]:2200"}
	if got := c.Addrs(); !reflect.DeepEqual(got, wantAddrs) {
		t.Errorf("Addrs = %v, want %v", got, wantAddrs)
	}
	if c.SlogLevel() != -4 {
		t.Errorf("SlogLevel = %v", c.SlogLevel())
	}
	// Every supported keyword's example sets a value other than the
	// default, and a wrong case of the keyword finds it too.
	for _, ki := range KeywordTable() {
		if _, ok := lookupKeyword(strings.ToUpper(ki.Name)); !ok {
			t.Errorf("%s not found case-insensitively", ki.Name)
		}
	}
}

func TestFirstWins(t *testing.T) {
	c := parse(t, "MaxAuthTries 3\nMaxAuthTries 4\nCiphers aes256-ctr\nCiphers aes128-ctr\nSubsystem x /a\nSubsystem x /b\n")
	if c.MaxAuthTries != 3 || !reflect.DeepEqual(c.Ciphers, []string{"aes256-ctr"}) || c.Subsystem("x") != "/a" {
		t.Errorf("first value did not win: %d %v %v", c.MaxAuthTries, c.Ciphers, c.Subsystems)
	}
	// A later line is still checked.
	if err := parseErr("MaxAuthTries 3\nMaxAuthTries many\n"); err == nil {
		t.Error("bad repeated value accepted")
	}
}

func TestOverridesWin(t *testing.T) {
	file := "Port 2222\nHostKey /a\nHostKey /b\nMaxAuthTries 3\nProviderMap aes128-gcm=cpu\n"
	c := parse(t, file, "maxauthtries=5", "Port 2300", "HostKey=/c", "ProviderMap=aes128-gcm=software")
	if c.MaxAuthTries != 5 || !reflect.DeepEqual(c.Ports, []int{2300}) ||
		!reflect.DeepEqual(c.HostKeys, []string{"/c"}) || c.ProviderMap["aes128-gcm"] != "software" {
		t.Errorf("overrides lost: %d %v %v %v", c.MaxAuthTries, c.Ports, c.HostKeys, c.ProviderMap)
	}
	if !c.IsSet("maxauthtries") || c.IsSet("MaxSessions") {
		t.Error("IsSet wrong")
	}
	// File lines overridden on the command line are still checked.
	if _, err := Parse("f", strings.NewReader("Port x\n"), []string{"Port=1"}); err == nil {
		t.Error("bad overridden line accepted")
	}
}

// TestUserPatternsLikeSshd: the entries OpenSSH 9.2's sshd -t accepts
// (compared side by side) parse; the user part is one wildcard pattern,
// ',' and '!' included, and an entry with '/' that is not an address and
// a length up to 128 is a wildcard. The refusals are in TestLineErrors.
func TestUserPatternsLikeSshd(t *testing.T) {
	for _, line := range []string{
		"DenyUsers *,!root", "AllowUsers *,!root", "DenyUsers a,b", "DenyUsers @host",
		"DenyUsers a@b@10.0.0.0/8", `DenyUsers "a b"`, "DenyUsers a@!10.0.0.0/8,*",
		"DenyUsers a@10.0.0.0/", "DenyUsers a@x/8", "DenyUsers a@10.0.0.0/x", "DenyUsers a@10.0.0.0/08",
		"DenyUsers a@10.0.0.0/129", "DenyUsers a@::1/200", "Match Address x/8", "Match Address 10.0.0.0/",
		"DenyGroups *,!g", "AllowGroups *,!g",
	} {
		if err := parseErr(line + "\n"); err != nil {
			t.Errorf("%s: %v (OpenSSH 9.2 accepts it)", line, err)
		}
	}
}

func TestNoneValues(t *testing.T) {
	c := parse(t, "Banner none\nPidFile NONE\nAuthorizedKeysFile none\nMetricsAddress none\nCalibrationCache none\nTrustedUserCAKeys none\nRevokedKeys none\nVersionAddendum none\n")
	if c.Banner != "" || c.PidFile != "" || c.AuthorizedKeysFile != nil || c.MetricsAddress != "" || c.CalibrationCache != "none" ||
		c.RevokedKeys != "" || c.VersionAddendum != "" {
		t.Errorf("none not honoured: %+v", c)
	}
}

func TestWindowAuto(t *testing.T) {
	if c := parse(t, "ChannelWindowSize auto\n"); c.ChannelWindowSize != 0 {
		t.Errorf("ChannelWindowSize auto = %d, want 0 (auto)", c.ChannelWindowSize)
	}
	if c := parse(t, "ChannelWindowSize 4M\n"); c.ChannelWindowSize != 4<<20 {
		t.Errorf("ChannelWindowSize 4M = %d", c.ChannelWindowSize)
	}
}

func TestSubsystemReplacesDefault(t *testing.T) {
	c := parse(t, "Subsystem sftp /usr/lib/openssh/sftp-server -l INFO\n")
	if len(c.Subsystems) != 1 || c.Subsystem("sftp") != "/usr/lib/openssh/sftp-server -l INFO" {
		t.Errorf("Subsystems = %v", c.Subsystems)
	}
}

// TestInternalSFTPFlags: a flag the built-in SFTP server does not honour
// is refused, never ignored (-R accepted and ignored would take uploads).
func TestInternalSFTPFlags(t *testing.T) {
	values := map[byte]string{'d': "/srv/%u", 'f': "LOCAL5", 'l': "INFO", 'P': "remove", 'p': "read,open,close", 'u': "027"}
	for _, f := range internalSFTPFlags {
		line := "Subsystem sftp internal-sftp -" + string(f.flag)
		if f.arg {
			line += " " + values[f.flag]
		}
		err := parseErr(line + "\n")
		if f.status == Supported {
			if err != nil {
				t.Errorf("%q: %v", line, err)
			}
			continue
		}
		if !errors.Is(err, ErrNotImplemented) || !strings.Contains(err.Error(), f.what) {
			t.Errorf("%q: %v", line, err)
		}
	}
	for _, bad := range []string{"internal-sftp -x", "internal-sftp -l", "internal-sftp oops",
		"internal-sftp -u 999", "internal-sftp -l LOUD", "internal-sftp -P nuke", "internal-sftp -f KERN"} {
		if err := parseErr("Subsystem sftp " + bad + "\n"); err == nil || errors.Is(err, ErrNotImplemented) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestLineErrors(t *testing.T) {
	cases := []struct {
		line, keyword, msg string
		is                 error
	}{
		{"Bogus yes", "Bogus", "unknown keyword", ErrUnknownKeyword},
		{"UseDNS yes", "UseDNS", `reverse DNS look-ups of clients (UseDNS yes) is not implemented in offload; only "UseDNS no" is accepted`, ErrNotImplemented},
		{"Compression zlib", "Compression", "", nil},
		{"LogVerbose kex.c:*:1000", "LogVerbose", "LogVerbose (LogVerbose kex.c:*:1000) is not implemented in offload", ErrNotImplemented},
		{"ListenAddress 127.0.0.1 rdomain blue", "ListenAddress", "routing domain", ErrNotImplemented},
		{"ForceCommand internal-sftp -e", "ForceCommand", "logging to stderr (-e)", ErrNotImplemented},
		{"ForceCommand internal-sftp -x", "ForceCommand", "unknown option -x", nil},
		{"ForceCommand internal-sftp -u 999", "ForceCommand", "internal-sftp", nil},
		{"SetEnv A", "SetEnv", "not NAME=value", nil},
		{"SetEnv =x", "SetEnv", "not NAME=value", nil},
		{"PermitListen 80 none", "PermitListen", "alone", nil},
		{"PermitListen host:x", "PermitListen", "bad port", nil},
		{"PermitOpen host", "PermitOpen", "not host:port", nil},
		{"ChannelTimeout session", "ChannelTimeout", "not type=interval", nil},
		{"ChannelTimeout session=5x", "ChannelTimeout", "unknown time unit", nil},
		{"GatewayPorts sometimes", "GatewayPorts", "not one of", nil},
		{"X11DisplayOffset -1", "X11DisplayOffset", "out of range", nil},
		{"Port", "Port", "missing argument", nil},
		{"Port 0", "Port", "out of range", nil},
		{"Port 22 23", "Port", "takes 1 argument", nil},
		{"Port 70000", "Port", "out of range", nil},
		{"ListenAddress 1.2.3.4:x", "ListenAddress", "port", nil},
		{"ListenAddress a/b", "ListenAddress", "not a host", nil},
		{"HostKey pkcs11:token=a%zz", "HostKey", "percent", nil},
		{"HostKey \"\"", "HostKey", "empty", nil},
		{"AuthorizedKeysFile %x/keys", "AuthorizedKeysFile", "%-token", nil},
		{"Ciphers blowfish-cbc", "Ciphers", "unknown Ciphers algorithm", nil},
		{"Ciphers rot13", "Ciphers", "unknown Ciphers algorithm", nil},
		{"Ciphers -*", "Ciphers", "leaves no Ciphers", nil},
		{"Ciphers !aes128-ctr", "Ciphers", "cannot negate", nil},
		{"KexAlgorithms gss-group14-sha1-", "KexAlgorithms", "leaves no", nil},
		{"MACs hmac-ripemd160", "MACs", "unknown MACs algorithm", nil},
		{"HostKeyAlgorithms +ssh-dss", "HostKeyAlgorithms", "DSA keys and signatures are not supported", nil},
		{"PubkeyAcceptedAlgorithms ssh-dss,ssh-ed25519", "PubkeyAcceptedAlgorithms", "OpenSSH 10 removed them", nil},
		{"MACs hmac-sha2-256-etm@openssh.com,,x", "MACs", "empty name", nil},
		{"HostKeyAlgorithms ssh-foo", "HostKeyAlgorithms", "unknown", nil},
		{"PasswordAuthentication maybe", "PasswordAuthentication", "not yes or no", nil},
		{"PubkeyAuthentication 1", "PubkeyAuthentication", "not yes or no", nil},
		{"StrictModes off", "StrictModes", "not yes or no", nil},
		{"PermitRootLogin sometimes", "PermitRootLogin", "not one of", nil},
		{"AllowUsers a@10.0.0.1/8", "AllowUsers", "host bits", nil},
		{"AllowUsers a@", "AllowUsers", "empty entry", nil},
		{"DenyUsers a@x,,y", "DenyUsers", "empty entry", nil},
		{"DenyUsers a@10.0.0.0/33", "DenyUsers", "bad network", nil},
		{"Match Address ::1/127", "Match", "host bits", nil},
		{"MaxStartups 10:30", "MaxStartups", "start:rate:full", nil},
		{"MaxStartups 50:30:10", "MaxStartups", "above full", nil},
		{"MaxStartups 10:101:100", "MaxStartups", "out of range", nil},
		{"MaxAuthTries 0", "MaxAuthTries", "out of range", nil},
		{"MaxSessions -1", "MaxSessions", "out of range", nil},
		{"LoginGraceTime 2x", "LoginGraceTime", "unknown time unit", nil},
		{"LoginGraceTime 99999999999", "LoginGraceTime", "not a time", nil},
		{"ClientAliveInterval 400d", "ClientAliveInterval", "longer than a year", nil},
		{"ClientAliveCountMax x", "ClientAliveCountMax", "not an integer", nil},
		{"Subsystem sftp", "Subsystem", "at least 2", nil},
		{"AcceptEnv A=B", "AcceptEnv", "bad environment", nil},
		{"AllowTcpForwarding sometimes", "AllowTcpForwarding", "not one of", nil},
		{"Banner", "Banner", "missing argument", nil},
		{"PidFile a b", "PidFile", "takes 1", nil},
		{"LogLevel LOUD", "LogLevel", "not one of", nil},
		{"SyslogFacility KERN", "SyslogFacility", "not one of", nil},
		{"RekeyLimit 1kb", "RekeyLimit", "not a size", nil},
		{"RekeyLimit 8", "RekeyLimit", "below 16", nil},
		{"RekeyLimit 1G 1y", "RekeyLimit", "unknown time unit", nil},
		{"RekeyLimit 8E", "RekeyLimit", "larger than", nil},
		{"PKCS11Module", "PKCS11Module", "missing argument", nil},
		{"PKCS11Token token=x", "PKCS11Token", "must start with", nil},
		{"PKCS11PinSource \"\"", "PKCS11PinSource", "empty path", nil},
		{"CryptoPolicy turbo", "CryptoPolicy", "mode must be", nil},
		{"ProviderMap aes128-gcm", "ProviderMap", "algorithm=provider", nil},
		{"ProviderMap rot13=cpu", "ProviderMap", "unknown algorithm", nil},
		{"ProviderDeny rot13=cpu", "ProviderDeny", "known algorithm", nil},
		{"ChannelWindowSize 1K", "ChannelWindowSize", "below", nil},
		{"ChannelWindowSize 8G", "ChannelWindowSize", "larger than", nil},
		{"MetricsAddress 9100", "MetricsAddress", "not host:port", nil},
		{"CalibrationCache \"\"", "CalibrationCache", "empty path", nil},
		{"StreamLocalBindMask 0999", "StreamLocalBindMask", "octal", nil},
		{"PermitOpen any localhost:80", "PermitOpen", "alone", nil},
		{"AuthenticationMethods publickey,magic", "AuthenticationMethods", "unknown authentication method", nil},
		{"AuthorizedKeysCommand keys %u", "AuthorizedKeysCommand", "absolute path", nil},
		{"PerSourcePenalties crash:x", "PerSourcePenalties", "not a time", nil},
		{"Match Colour blue", "Match", "unsupported Match attribute", ErrBadMatch},
		{"Match User", "Match", "missing Match criteria", ErrBadMatch},
		{"Match all User x", "Match", "'all' cannot be combined", ErrBadMatch},
		{"Match Address 10.0.0.0/33", "Match", "bad network", ErrBadMatch},
		{"Match Address 10.0.0.1/8", "Match", "host bits", ErrBadMatch},
		{"Match LocalPort http", "Match", "invalid LocalPort", ErrBadMatch},
		{"Match User a,,b", "Match", "empty entry", ErrBadMatch},
		{"Match User !", "Match", "empty entry", ErrBadMatch},
		{`Banner "/etc/issue`, "Banner", "unterminated", ErrUnterminatedQuote},
		{"Port 22\x00", "", "control character", ErrControlChar},
		{"Ciphers " + strings.Repeat("aes128-ctr,", 128) + "aes128-ctr", "Ciphers", "more than 128 names", nil},
		{"AllowUsers " + strings.Repeat("u ", 4097), "AllowUsers", "more than 4096", nil},
	}
	for _, tc := range cases {
		text := "# leading comment\n\n" + tc.line + "\n"
		_, err := Parse("/etc/offload/sshd_config", strings.NewReader(text), nil)
		var le *LineError
		if !errors.As(err, &le) {
			t.Errorf("%q: error %v is not a *LineError", tc.line, err)
			continue
		}
		if le.File != "/etc/offload/sshd_config" || le.Line != 3 || le.Keyword != tc.keyword {
			t.Errorf("%q: LineError %+v", tc.line, le)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "config: /etc/offload/sshd_config line 3: ") || !strings.Contains(msg, tc.msg) {
			t.Errorf("%q: message %q, want it to contain %q", tc.line, msg, tc.msg)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%q: %v is not %v", tc.line, err, tc.is)
		}
	}
}

func TestOverrideError(t *testing.T) {
	_, err := Parse("f", nil, []string{"Port=22", "MaxSessions=lots"})
	var le *LineError
	if !errors.As(err, &le) || le.File != CommandLine || le.Line != 2 || le.Keyword != "MaxSessions" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "command line option 2 (-o): MaxSessions") {
		t.Errorf("message %q", err)
	}
	for _, o := range []string{"Match=User x", "Include /etc/x"} {
		if _, err := Parse("f", nil, []string{o}); !errors.Is(err, ErrNotImplemented) || !strings.Contains(err.Error(), "command-line option") {
			t.Errorf("-o %s: %v", o, err)
		}
	}
}

func TestLongLine(t *testing.T) {
	text := "Port 22\nAllowUsers " + strings.Repeat("a", maxLineLength) + "\n"
	_, err := Parse("f", strings.NewReader(text), nil)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("err = %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(t.TempDir()+"/nope", nil)
	if err == nil || !strings.HasPrefix(err.Error(), "config: ") {
		t.Errorf("err = %v", err)
	}
	c, err := Load("", []string{"Port 2022"})
	if err != nil || c.Ports[0] != 2022 {
		t.Errorf("Load without file: %v %v", c, err)
	}
}

func TestPrintRoundTrip(t *testing.T) {
	text := "Port 2222\nListenAddress 127.0.0.1\nHostKey \"/keys/my key\"\nSubsystem sftp internal-sftp\n" +
		"Subsystem x \"/bin/x -a\" b\nAcceptEnv LANG\nProviderMap aes128-gcm=cpu\nProviderDeny aes128-ctr\n" +
		"RekeyLimit 512M 30m\nMetricsAddress [::1]:9100\nAllowUsers a b\nBanner \"#not a comment\"\nVersionAddendum a b # c\n"
	c := parse(t, text)
	out := printed(c)
	// a rest-of-line value keeps its '#' (versionaddendum), as in OpenSSH
	for _, want := range []string{"port 2222\n", "listenaddress 127.0.0.1:2222\n", "hostkey \"/keys/my key\"\n",
		"ciphers chacha20-poly1305@openssh.com,", "rekeylimit 536870912 1800\n", "cryptopolicy fastest\n",
		"providermap aes128-gcm=cpu\n", "logingracetime 120\n", "channelwindowsize auto\n", "pidfile none\n",
		"calibrationcache default\n", "subsystem x /bin/x -a b\n", "versionaddendum a b # c\n", "usepam no\n",
		"x11forwarding no\n", "permitopen any\n", "authenticationmethods any\n", "streamlocalbindmask 0177\n",
		"unusedconnectiontimeout none\n", "syslogfacility AUTH\n", "persourcepenalties yes\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("Print output lacks %q:\n%s", want, out)
		}
	}
	back := parse(t, out)
	if printed(back) != out {
		t.Errorf("round trip differs:\n%s\n---\n%s", out, printed(back))
	}
	// Every keyword with a value appears in Print, except the empty lists.
	d := "\n" + printed(Defaults())
	for _, kw := range keywords {
		if kw.print == nil || kw.noPrint || len(kw.print(Defaults())) == 0 {
			continue
		}
		if !strings.Contains(d, "\n"+strings.ToLower(kw.name)+" ") {
			t.Errorf("Print lacks %s", kw.name)
		}
	}
}

func TestPrintRedactsPIN(t *testing.T) {
	c := parse(t, "HostKey pkcs11:object=k?pin-value=123456\nPKCS11Token pkcs11:token=t?pin-value=123456\n")
	if strings.Contains(printed(c), "123456") {
		t.Errorf("PIN printed:\n%s", printed(c))
	}
}

func TestClone(t *testing.T) {
	c := parse(t, "HostKey /a\nProviderMap aes128-gcm=cpu\nAcceptEnv A\n")
	d := c.Clone()
	d.HostKeys[0] = "/b"
	d.ProviderMap["aes128-gcm"] = "software"
	d.AcceptEnv[0] = "B"
	if c.HostKeys[0] != "/a" || c.ProviderMap["aes128-gcm"] != "cpu" || c.AcceptEnv[0] != "A" || !d.IsSet("HostKey") {
		t.Error("Clone shares state")
	}
}

func TestPolicy(t *testing.T) {
	c := parse(t, "CryptoPolicy software-only\nProviderMap aes128-gcm=software\nProviderDeny cpu\n")
	p := c.Policy()
	if p.Mode != provider.ModeSoftwareOnly || p.Pins["aes128-gcm"] != "software" || len(p.Deny) != 1 || p.Deny[0].Provider != "cpu" {
		t.Errorf("Policy = %v", p)
	}
}

// TestSampleConfig keeps docs/sshd_config.sample valid, and checks that
// every commented-out default in it parses too.
func TestSampleConfig(t *testing.T) {
	const sample = "../../docs/sshd_config.sample"
	c, err := Load(sample, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.HostKeys) != 1 || c.PKCS11Module == "" {
		t.Errorf("sample: %+v", c)
	}
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if len(line) > 1 && line[0] == '#' && line[1] >= 'A' && line[1] <= 'Z' {
			if _, err := Parse(sample, strings.NewReader(line[1:]), nil); err != nil {
				t.Errorf("line %d %q: %v", i+1, line, err)
			}
		}
	}
}

func TestPortLimit(t *testing.T) {
	var b strings.Builder
	for p := 1; p <= 257; p++ {
		fmt.Fprintf(&b, "Port %d\n", p)
	}
	_, err := Parse("f", strings.NewReader(b.String()), nil)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 257 || !strings.Contains(err.Error(), "more than 256 ports") {
		t.Errorf("err = %v", err)
	}
}

// TestDeprecatedWarn: deprecated and unsupported keywords warn as sshd
// does and change nothing.
func TestDeprecatedWarn(t *testing.T) {
	text := "UseLogin no\nRSAAuthentication yes\nProtocol 1\nGSSAPIAuthentication yes\nKerberosAuthentication yes\n" +
		"UsePrivilegeSeparation sandbox\nGSSAPIKexAlgorithms gss-curve25519-sha256-\n"
	c := parse(t, text)
	ws := c.Warnings()
	want := []string{"Deprecated option UseLogin", "Deprecated option RSAAuthentication", "Deprecated option Protocol",
		"Unsupported option GSSAPIAuthentication", "Unsupported option KerberosAuthentication",
		"Deprecated option UsePrivilegeSeparation", "Unsupported option GSSAPIKexAlgorithms"}
	if len(ws) != len(want) {
		t.Fatalf("warnings %v", ws)
	}
	for i, w := range ws {
		if !strings.Contains(w.String(), want[i]) || w.Line != i+1 || w.File != "test_config" {
			t.Errorf("warning %d = %q (%+v), want %q", i, w, w, want[i])
		}
	}
	if printed(c) != printed(Defaults()) {
		t.Error("deprecated keywords changed the configuration")
	}
}

func TestAliases(t *testing.T) {
	c := parse(t, "PubkeyAcceptedKeyTypes ssh-ed25519\nKeepAlive no\nChallengeResponseAuthentication no\nHostDSAKey /k\n")
	if !slices.Equal(c.PubkeyAcceptedAlgorithms, []string{"ssh-ed25519"}) || c.TCPKeepAlive || !slices.Equal(c.HostKeys, []string{"/k"}) ||
		c.KbdInteractiveAuthentication || !c.IsSet("KbdInteractiveAuthentication") {
		t.Errorf("aliases: %v %v %v %v", c.PubkeyAcceptedAlgorithms, c.TCPKeepAlive, c.HostKeys, c.KbdInteractiveAuthentication)
	}
}

func TestAddressFamily(t *testing.T) {
	for fam, want := range map[string]string{"any": ":22", "inet": "0.0.0.0:22", "inet6": "[::]:22"} {
		c := parse(t, "AddressFamily "+fam+"\n")
		if got := c.Addrs(); len(got) != 1 || got[0] != want {
			t.Errorf("%s: Addrs = %v, want %s", fam, got, want)
		}
	}
	if parse(t, "AddressFamily inet6\n").ListenNetwork() != "tcp6" || Defaults().ListenNetwork() != "tcp" {
		t.Error("ListenNetwork")
	}
}

func TestMaxStartupsDrop(t *testing.T) {
	m := MaxStartups{Start: 10, Rate: 30, Full: 100}
	fixed := func(v int) func() int { return func() int { return v } }
	cases := []struct {
		pending, roll int
		drop          bool
	}{
		{0, 0, false}, {9, 0, false}, // below start: never
		{10, 29, true}, {10, 30, false}, // at start: rate percent
		{55, 64, true}, {55, 65, false}, // half way: 30 + 70/2
		{99, 98, true}, {100, 99, true}, {500, 99, true}, // full: always
	}
	for _, tc := range cases {
		if got := m.Drop(tc.pending, fixed(tc.roll)); got != tc.drop {
			t.Errorf("Drop(%d) with roll %d = %v, want %v", tc.pending, tc.roll, got, tc.drop)
		}
	}
	hard := MaxStartups{Start: 5, Rate: 100, Full: 5} // "MaxStartups 5"
	if hard.Drop(4, nil) || !hard.Drop(5, nil) {
		t.Error("bare limit")
	}
	// With the real random source, about Rate percent drop at Start.
	n := 0
	for range 10000 {
		if m.Drop(10, nil) {
			n++
		}
	}
	if n < 2500 || n > 3500 {
		t.Errorf("%d of 10000 dropped at start, want about 3000", n)
	}
}

// TestCryptoProfileHardened: the lists the file leaves unset take the
// hardened profile's defaults, whatever the order of the lines; a list
// the file sets stays as set.
func TestCryptoProfileHardened(t *testing.T) {
	c := parse(t, "KexAlgorithms curve25519-sha256,sntrup761x25519-sha512@openssh.com\nCryptoProfile hardened\n")
	if !slices.Equal(c.KexAlgorithms, []string{"curve25519-sha256", "sntrup761x25519-sha512@openssh.com"}) {
		t.Errorf("explicit KexAlgorithms changed: %v", c.KexAlgorithms)
	}
	if slices.Contains(c.MACs, "hmac-sha2-256") || !slices.Contains(c.MACs, "hmac-sha2-256-etm@openssh.com") {
		t.Errorf("hardened MACs %v", c.MACs)
	}
	if slices.Contains(c.HostKeyAlgorithms, "ecdsa-sha2-nistp256") {
		t.Errorf("hardened host-key algorithms %v", c.HostKeyAlgorithms)
	}
	d := parse(t, "")
	if !slices.Contains(d.MACs, "hmac-sha2-256") {
		t.Errorf("default MACs lack hmac-sha2-256 (libssh2): %v", d.MACs)
	}
	if _, err := Parse("x", strings.NewReader("CryptoProfile paranoid\n"), nil); err == nil {
		t.Error("unknown profile accepted")
	}
}

// TestTOS: IPQoS names and numbers as OpenSSH reads them.
func TestTOS(t *testing.T) {
	for v, want := range map[string]int{"af21": 0x48, "CS1": 0x20, "ef": 0xb8, "lowdelay": 0x10, "throughput": 0x08,
		"none": -1, "0x48": 0x48, "72": 72, "010": 8, "255": 255} {
		if got, err := TOS(v); err != nil || got != want {
			t.Errorf("TOS(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"256", "-1", "af99", "", "0x"} {
		if _, err := TOS(v); err == nil {
			t.Errorf("TOS(%q) accepted", v)
		}
	}
}

// Compression takes OpenSSH's values; delayed, its legacy synonym of yes,
// reads (and prints, as sshd -T does) as yes.
func TestCompressionValues(t *testing.T) {
	for in, want := range map[string]string{"yes": "yes", "delayed": "yes", "no": "no", "DELAYED": "yes"} {
		c, err := Parse("f", strings.NewReader("Compression "+in+"\n"), nil)
		if err != nil || c.Compression != want {
			t.Errorf("Compression %s: %q, %v", in, c.Compression, err)
		}
	}
}
