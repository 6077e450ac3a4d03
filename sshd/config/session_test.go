package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSessionAndForwardingKeywords: the session, X11 and forwarding
// keywords parse as sshd parses them and -T prints them as sshd does.
func TestSessionAndForwardingKeywords(t *testing.T) {
	c := parse(t, `X11Forwarding yes
X11DisplayOffset 20
X11UseLocalhost no
XAuthLocation /opt/bin/xauth
AllowAgentForwarding no
AllowStreamLocalForwarding remote
StreamLocalBindMask 0111
StreamLocalBindUnlink yes
GatewayPorts clientspecified
PermitOpen db:5432 [::1]:*
PermitListen 8080 localhost:*
PermitListen 9090
PermitTTY no
PermitUserRC no
PrintMotd no
SetEnv A=1 "B=x y" A=2
SetEnv C=3
ChannelTimeout session=5m global=1h
UnusedConnectionTimeout 10m
ForceCommand internal-sftp -R -l INFO
PermitUserEnvironment LANG,LC_*,!LC_ALL
`)
	checks := []struct {
		name      string
		got, want any
	}{
		{"X11Forwarding", c.X11Forwarding, true},
		{"X11DisplayOffset", c.X11DisplayOffset, 20},
		{"X11UseLocalhost", c.X11UseLocalhost, false},
		{"XAuthLocation", c.XAuthLocation, "/opt/bin/xauth"},
		{"AllowAgentForwarding", c.AllowAgentForwarding, false},
		{"AllowStreamLocalForwarding", c.AllowStreamLocalForwarding, "remote"},
		{"StreamLocalBindMask", c.StreamLocalBindMask, uint32(0o111)},
		{"StreamLocalBindUnlink", c.StreamLocalBindUnlink, true},
		{"GatewayPorts", c.GatewayPorts, "clientspecified"},
		{"PermitOpen", c.PermitOpen, []string{"db:5432", "[::1]:*"}},
		{"PermitListen", c.PermitListen, []string{"*:8080", "localhost:*"}}, // a bare port is any host; the first line wins
		{"PermitTTY", c.PermitTTY, false},
		{"PermitUserRC", c.PermitUserRC, false},
		{"PrintMotd", c.PrintMotd, false},
		{"SetEnv", c.SetEnv, []string{"A=1", "B=x y"}}, // the first line wins, and the first A on it
		{"ChannelTimeout", c.ChannelTimeout, []string{"session=5m", "global=1h"}},
		{"UnusedConnectionTimeout", c.UnusedConnectionTimeout, 10 * time.Minute},
		{"ForceCommand", c.ForceCommand, "internal-sftp -R -l INFO"},
		{"PermitUserEnvironment", c.PermitUserEnvironment, true},
		{"PermitUserEnvironmentList", c.PermitUserEnvironmentList, []string{"LANG", "LC_*", "!LC_ALL"}},
	}
	for _, ck := range checks {
		if !reflect.DeepEqual(ck.got, ck.want) {
			t.Errorf("%s = %#v, want %#v", ck.name, ck.got, ck.want)
		}
	}
	out := printed(c)
	for _, line := range []string{"x11forwarding yes", "x11displayoffset 20", "x11uselocalhost no", "xauthlocation /opt/bin/xauth",
		"allowagentforwarding no", "allowstreamlocalforwarding remote", "streamlocalbindmask 0111", "streamlocalbindunlink yes",
		"gatewayports clientspecified", "permitopen db:5432 [::1]:*", "permitlisten *:8080 localhost:*", "permittty no",
		"permituserrc no", "printmotd no", `setenv A=1 "B=x y"`, "channeltimeout session=5m global=1h",
		"unusedconnectiontimeout 600", "forcecommand internal-sftp -R -l INFO", "permituserenvironment LANG,LC_*,!LC_ALL"} {
		if !strings.Contains(out, "\n"+line+"\n") {
			t.Errorf("-T lacks %q", line)
		}
	}
	if again := printed(parse(t, out)); again != out {
		t.Errorf("printed configuration does not parse back to itself:\n%s", again)
	}
}

func TestPermitUserEnvironmentValues(t *testing.T) {
	for text, want := range map[string][2]any{
		"yes":    {true, []string(nil)},
		"no":     {false, []string(nil)},
		"LANG":   {true, []string{"LANG"}},
		"Yes":    {true, []string{"Yes"}}, // sshd compares exactly: anything else is a pattern list
		"A,!B,*": {true, []string{"A", "!B", "*"}},
	} {
		c := parse(t, "PermitUserEnvironment "+text+"\n")
		if c.PermitUserEnvironment != want[0] || !reflect.DeepEqual(c.PermitUserEnvironmentList, want[1]) {
			t.Errorf("PermitUserEnvironment %s: %v %#v", text, c.PermitUserEnvironment, c.PermitUserEnvironmentList)
		}
		if p := printed(c); !strings.Contains(p, "\npermituserenvironment "+text+"\n") {
			t.Errorf("PermitUserEnvironment %s prints %q", text, p)
		}
	}
	if err := parseErr("PermitUserEnvironment \"\"\n"); err == nil {
		t.Error("empty PermitUserEnvironment accepted")
	}
}

func TestXAuthLocationNone(t *testing.T) {
	c := parse(t, "XAuthLocation NONE\n")
	if c.XAuthLocation != "none" || !strings.Contains(printed(c), "\nxauthlocation none\n") {
		t.Errorf("XAuthLocation none: %q", c.XAuthLocation)
	}
}

// TestForceCommandInternalSFTP: a forced internal-sftp is checked as the
// Subsystem's is; any other command is taken as written.
func TestForceCommandInternalSFTP(t *testing.T) {
	for _, ok := range []string{"internal-sftp", "internal-sftp -R", "internal-sftp -d /srv/%u -u 027 -P remove",
		"/usr/bin/internal-sftp -e", "internal-sftpx -e", `echo "$SSH_ORIGINAL_COMMAND" -e`} {
		if c, err := Parse("f", strings.NewReader("ForceCommand "+ok+"\n"), nil); err != nil || c.ForceCommand != ok {
			t.Errorf("ForceCommand %s: %v", ok, err)
		}
	}
	for _, bad := range []string{"internal-sftp -e", "internal-sftp -R -e"} {
		if err := parseErr("ForceCommand " + bad + "\n"); !errors.Is(err, ErrNotImplemented) {
			t.Errorf("ForceCommand %s: %v", bad, err)
		}
	}
	for _, bad := range []string{"internal-sftp -q", "internal-sftp -l", "internal-sftp -l LOUD", `internal-sftp -d "/open`} {
		if err := parseErr("ForceCommand " + bad + "\n"); err == nil || errors.Is(err, ErrNotImplemented) {
			t.Errorf("ForceCommand %s: %v", bad, err)
		}
	}
	// In a Match block, for the connections it matches.
	c := parse(t, "Match User sftponly\n\tForceCommand internal-sftp -R\n")
	eff, err := c.ForConnection(ConnInfo{User: "sftponly", Addr: "192.0.2.1"})
	if err != nil || eff.ForceCommand != "internal-sftp -R" || c.ForceCommand != "" {
		t.Errorf("ForceCommand in Match: %q (global %q) %v", eff.ForceCommand, c.ForceCommand, err)
	}
}
