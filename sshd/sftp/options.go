package sftp

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/offload/offload/internal/argv"
)

// Options are the command-line flags of internal-sftp and sftp-server(8),
// as written after the program name in "Subsystem sftp internal-sftp -R"
// or "ForceCommand internal-sftp -d /srv/%u". The zero value serves
// everything with the session's umask and logs errors only.
type Options struct {
	// ReadOnly (-R) refuses every request that changes the file system
	// with SSH_FX_PERMISSION_DENIED: open for writing, creating or
	// truncating, and the requests marked as writes in Requests.
	ReadOnly bool
	// Allow (-p) lists the request names (see Requests) that are served;
	// nil serves all. Deny (-P) lists names that are refused; it is
	// applied first, as in OpenSSH.
	Allow, Deny []string
	// StartDir (-d) is the directory relative paths start in, instead of
	// the home directory. It may use %d (home directory), %u (user name),
	// %U (numeric uid), %% and a leading ~; Config.StartDir expands it.
	StartDir string
	// Umask (-u) masks the mode of created files and directories. Nil
	// leaves it to Config.Umask.
	Umask *fs.FileMode
	// LogLevel (-l) is OpenSSH's log level for this session's messages:
	// QUIET, FATAL, ERROR (the default), INFO, VERBOSE, DEBUG, DEBUG1,
	// DEBUG2 or DEBUG3. At INFO every change to the file system is logged,
	// at VERBOSE every request that names a path.
	LogLevel string
	// Facility (-f) is the syslog facility of the messages (DAEMON, USER,
	// AUTH, AUTHPRIV, LOCAL0 ... LOCAL7; OpenSSH's default is AUTH). It is
	// passed to a logger whose handler implements FacilityHandler and
	// recorded as the "facility" attribute otherwise.
	Facility string
	// Stderr (-e) logs to standard error instead of syslog; it matters only
	// to Main, the stand-alone server.
	Stderr bool
}

// ArgsError is a bad internal-sftp or sftp-server command line.
type ArgsError struct {
	Arg string // the flag or value at fault
	Msg string
}

func (e *ArgsError) Error() string {
	return fmt.Sprintf("sftp: %s: %s", strconv.Quote(e.Arg), e.Msg)
}

// Maximum length of a command line ParseArgs accepts.
const maxArgsLen = 64 << 10

// ParseCommand parses a Subsystem or ForceCommand command line that names
// internal-sftp (or any program: only the flags after the first word are
// read), splitting words as OpenSSH does (blanks separate, single and
// double quotes group, backslash escapes).
func ParseCommand(cmd string) (*Options, error) {
	if len(cmd) > maxArgsLen {
		return nil, &ArgsError{Arg: cmd[:32] + "...", Msg: "command line too long"}
	}
	words, err := SplitArgs(cmd)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, &ArgsError{Arg: cmd, Msg: "empty command"}
	}
	return ParseArgs(words[1:])
}

// ParseArgs parses the flags of sftp-server(8): -e -h -R, -d dir, -f
// facility, -l level, -P list, -p list and -u umask, clustered or not
// ("-Rl INFO", "-uumask"), with "--" ending them. A bad flag or value is
// an error (OpenSSH's sftp-server exits for most of them; a bad -l or -f
// only warns there, but accepting and ignoring one would hide the
// mistake). -Q and -c are refused: they do not serve a session.
func ParseArgs(args []string) (*Options, error) {
	o := &Options{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			if i < len(args) {
				return nil, &ArgsError{Arg: args[i], Msg: "unexpected argument"}
			}
			break
		}
		if len(a) < 2 || a[0] != '-' {
			return nil, &ArgsError{Arg: a, Msg: "unexpected argument (flags are -ehR -d -f -l -P -p -u)"}
		}
		next, err := o.cluster(a[1:], args[i+1:])
		if err != nil {
			return nil, err
		}
		i += next
	}
	return o, nil
}

// cluster applies one argument's flags; it returns how many following
// arguments it used as values.
func (o *Options) cluster(flags string, rest []string) (int, error) {
	for j := 0; j < len(flags); j++ {
		c := flags[j]
		switch c {
		case 'e':
			o.Stderr = true
			continue
		case 'R':
			o.ReadOnly = true
			continue
		case 'd', 'f', 'l', 'P', 'p', 'u':
		case 'h':
			return 0, &ArgsError{Arg: "-h", Msg: "usage: internal-sftp [-ehR] [-d start_directory] [-f log_facility] [-l log_level] [-P denied_requests] [-p allowed_requests] [-u umask]"}
		default:
			return 0, &ArgsError{Arg: "-" + string(c), Msg: "unknown flag"}
		}
		value, used := flags[j+1:], 0
		if value == "" {
			if len(rest) == 0 {
				return 0, &ArgsError{Arg: "-" + string(c), Msg: "needs a value"}
			}
			value, used = rest[0], 1
		}
		return used, o.set(c, value)
	}
	return 0, nil
}

// set applies a flag that takes a value.
func (o *Options) set(c byte, v string) error {
	var err error
	switch c {
	case 'd':
		o.StartDir = v
	case 'f':
		o.Facility, err = parseFacility(v)
	case 'l':
		_, err = parseLevel(v)
		o.LogLevel = strings.ToUpper(v)
	case 'P', 'p':
		err = o.setList(c, v)
	case 'u':
		o.Umask, err = parseUmask(v)
	}
	return err
}

func (o *Options) setList(c byte, v string) error {
	list := splitList(v)
	for _, name := range list {
		if lookupName(name) == nil {
			return &ArgsError{Arg: name, Msg: fmt.Sprintf("-%c: unknown request name (see sftp.Requests)", c)}
		}
	}
	dst := &o.Allow
	if c == 'P' {
		dst = &o.Deny
	}
	if *dst != nil {
		return &ArgsError{Arg: "-" + string(c), Msg: "given twice"}
	}
	*dst = list
	return nil
}

// splitList splits a comma-separated list, dropping empty names.
func splitList(v string) []string {
	list := []string{}
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			list = append(list, n)
		}
	}
	return list
}

// parseUmask reads an octal umask between 0 and 0777.
func parseUmask(v string) (*fs.FileMode, error) {
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || n > 0o777 {
		return nil, &ArgsError{Arg: v, Msg: "-u: umask must be octal, 0 to 0777"}
	}
	m := fs.FileMode(n)
	return &m, nil
}

// SplitArgs splits a command line into words as OpenSSH does for
// internal-sftp (package argv, a '#' starting a word ends the line); a
// quote left open is an error.
func SplitArgs(s string) ([]string, error) {
	words, err := argv.Split(s, true)
	if err != nil {
		return nil, &ArgsError{Arg: s, Msg: "unterminated quote"}
	}
	return words, nil
}

var errNoExpand = errors.New("sftp: start directory names an unknown token")

// expandStartDir applies -d's tokens: a leading ~ or ~/ is the home
// directory, %d the home directory, %u the user name, %U the uid, %% a
// percent sign.
func expandStartDir(dir, home, user string, uid uint32) (string, error) {
	if dir == "~" {
		dir = home
	} else if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		dir = strings.TrimSuffix(home, "/") + "/" + rest
	}
	var b strings.Builder
	for i := 0; i < len(dir); i++ {
		if dir[i] != '%' {
			b.WriteByte(dir[i])
			continue
		}
		i++
		if i == len(dir) {
			return "", fmt.Errorf("%w: trailing %%", errNoExpand)
		}
		switch dir[i] {
		case 'd':
			b.WriteString(home)
		case 'u':
			b.WriteString(user)
		case 'U':
			b.WriteString(strconv.FormatUint(uint64(uid), 10))
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("%w: %%%c", errNoExpand, dir[i])
		}
	}
	return b.String(), nil
}
