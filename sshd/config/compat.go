package config

import (
	"fmt"
	"strings"
)

// compatKeywords are OpenSSH keywords for features offload does not have,
// accepted when their value asks for nothing (X11Forwarding no, UsePAM
// no), so that existing sshd_config files and OpenSSH's regress harness
// parse. Any other value is refused with ErrUnsupported. They have no
// field and -T does not print them.
var compatKeywords = []*keyword{
	offOnly("UsePAM", "no"),
	offOnly("X11Forwarding", "no"),
	offOnly("PrintMotd", "no"),
	offOnly("PrintLastLog", "no"),
	offOnly("PermitTunnel", "no"),
	offOnly("AllowAgentForwarding", "no"),
	offOnly("AllowStreamLocalForwarding", "no"),
	offOnly("ChallengeResponseAuthentication", "no"),
	offOnly("KbdInteractiveAuthentication", "no"),
	offOnly("GSSAPIAuthentication", "no"),
	offOnly("KerberosAuthentication", "no"),
	offOnly("HostbasedAuthentication", "no"),
	offOnly("IgnoreRhosts", "yes"),
	offOnly("PermitEmptyPasswords", "no"),
	offOnly("UseDNS", "no"),
	offOnly("Compression", "no"),
	offOnly("GatewayPorts", "no"),
	offOnly("PerSourcePenalties", "no"),
	offOnly("Protocol", "2"),
	ignored("SyslogFacility"), // logs go to stderr (the journal under systemd)
	ignored("SshdSessionPath"),
}

// offOnly accepts keyword only with one of values (any case).
func offOnly(name string, values ...string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1,
		set: func(_ *Config, a []string) error {
			for _, v := range values {
				if strings.EqualFold(a[0], v) {
					return nil
				}
			}
			return fmt.Errorf("%s %s: %w (only %s)", name, a[0], ErrUnsupported, strings.Join(values, ", "))
		}}
}

// ignored accepts keyword with any one argument.
func ignored(name string) *keyword {
	return &keyword{name: name, minArgs: 1, maxArgs: 1, set: func(*Config, []string) error { return nil }}
}
