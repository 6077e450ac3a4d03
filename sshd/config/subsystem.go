package config

import (
	"fmt"
	"strings"

	"github.com/offload/offload/sshd/sftp"
)

// sftpFlag is one option of internal-sftp (sftp-server(8)'s options).
type sftpFlag struct {
	flag   byte
	arg    bool   // takes an argument
	status Status // Supported once the connection layer honours it
	what   string
}

// internalSFTPFlags are the options "Subsystem sftp internal-sftp ..." and
// "ForceCommand internal-sftp ..." may carry. A flag the SFTP server does
// not honour is refused, never ignored: "-R" accepted and ignored would
// let a read-only server take uploads. sshd/sftp honours all but -e (its
// in-process messages always go to the server's log); the values of the
// supported ones are checked by sftp.ParseArgs, the parser the server
// itself uses.
var internalSFTPFlags = []sftpFlag{
	{'d', true, Supported, "a start directory (-d)"},
	{'e', false, Refused, "logging to stderr (-e)"},
	{'f', true, Supported, "a log facility (-f)"},
	{'l', true, Supported, "a log level (-l)"},
	{'P', true, Supported, "a list of denied requests (-P)"},
	{'p', true, Supported, "a list of allowed requests (-p)"},
	{'R', false, Supported, "read-only mode (-R)"},
	{'u', true, Supported, "a umask (-u)"},
}

// checkInternalSFTP checks the options of an internal-sftp command line:
// a syntax error, or a flag the server does not honour, is an error.
func checkInternalSFTP(args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			return fmt.Errorf("internal-sftp: unexpected argument %q", a)
		}
		for j := 1; j < len(a); j++ {
			f := findSFTPFlag(a[j])
			if f == nil {
				return fmt.Errorf("internal-sftp: unknown option -%c", a[j])
			}
			if f.arg {
				if j+1 == len(a) && i+1 == len(args) {
					return fmt.Errorf("internal-sftp: option -%c needs an argument", a[j])
				}
				if j+1 == len(a) {
					i++
				}
				j = len(a)
			}
			if f.status != Supported {
				return notImplemented("internal-sftp with %s", f.what)
			}
		}
	}
	if _, err := sftp.ParseArgs(args); err != nil {
		return fmt.Errorf("internal-sftp: %w", err)
	}
	return nil
}

func findSFTPFlag(c byte) *sftpFlag {
	for i := range internalSFTPFlags {
		if internalSFTPFlags[i].flag == c {
			return &internalSFTPFlags[i]
		}
	}
	return nil
}

// maxSubsystems bounds the Subsystem lines.
const maxSubsystems = 256

func subsystemKW() *keyword {
	return &keyword{name: "Subsystem", minArgs: 2, maxArgs: -1, repeat: accumulate,
		set: func(c *Config, a []string) error {
			name := a[0]
			if name == "" || strings.ContainsAny(name, " \t") {
				return fmt.Errorf("bad subsystem name %q", name)
			}
			if a[1] == InternalSFTP {
				if err := checkInternalSFTP(a[2:]); err != nil {
					return err
				}
			}
			if c.Subsystem(name) != "" {
				return nil // as sshd: the first definition of a name wins
			}
			c.Subsystems = append(c.Subsystems, Subsystem{Name: name, Command: strings.Join(a[1:], " ")})
			return checkCount(len(c.Subsystems), maxSubsystems, "subsystems")
		},
		def: func(c *Config) { c.Subsystems = []Subsystem{{Name: "sftp", Command: InternalSFTP}} },
		print: func(c *Config) [][]string {
			var out [][]string
			for _, s := range c.Subsystems {
				out = append(out, append([]string{s.Name}, strings.Fields(s.Command)...))
			}
			return out
		}}
}
