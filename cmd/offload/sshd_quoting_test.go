package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/config"
)

// quotingCases are configuration lines whose quotes, backslashes and '#'
// OpenSSH's sshd reads in its own way (not a shell's): a backslash
// escapes only quotes, backslashes and an unquoted space; a rest-of-line
// value keeps its '#'.
var quotingCases = []string{
	`ChrootDirectory a\b`, `ChrootDirectory a\\b`, `ChrootDirectory a\"b`, `ChrootDirectory a\'b`,
	`ChrootDirectory a\ b`, `ChrootDirectory "a\ b"`, `ChrootDirectory 'a\ b'`, `ChrootDirectory 'a\'b'`,
	`ChrootDirectory 'a\"b'`, `ChrootDirectory "a\"b"`, `ChrootDirectory a\`, `ChrootDirectory "a b"c`,
	`ChrootDirectory a"b c"d`, `ChrootDirectory a#b`, `ChrootDirectory #a`, `ChrootDirectory "#a"`,
	`ChrootDirectory a\#b`, `ChrootDirectory "a\\b"`, `ChrootDirectory 'a\\b'`, `ChrootDirectory \\`,
	`ChrootDirectory a\tb`, `ChrootDirectory "a`, `ChrootDirectory a'`, "ChrootDirectory a\t\\\tb",
	`ChrootDirectory a\  b`, `ChrootDirectory=a`, `ChrootDirectory = "a b" #c`,
	`ForceCommand echo 'a #b'`, `ForceCommand a\ `, `ForceCommand echo a #b`, `ForceCommand echo "a #b" #c`,
	`ForceCommand echo a\ #b`, `ForceCommand echo 'a`, `ForceCommand =echo x`, `ForceCommand = echo x`,
	"ForceCommand echo x  \t", `ForceCommand echo a\`, `ForceCommand #x`, `ForceCommand echo "a\" #`,
	`ForceCommand echo '\'' "\\" \q`,
}

// TestQuotingMatchesOpenSSH reads each of quotingCases with OpenSSH's
// sshd -T and offload's: both refuse the line, or both take the same
// value. (sshd -T prints values as they are, offload quoted so that they
// read back: offload's printed value is read with its own lexer.)
func TestQuotingMatchesOpenSSH(t *testing.T) {
	sshdBin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	dir := t.TempDir()
	key := writeHostKey(t, dir)
	for _, c := range quotingCases {
		kw := strings.ToLower(c[:strings.IndexAny(c, " =")])
		cfg := writeFileT(t, dir, "sshd_config", "HostKey "+key+"\n"+c+"\n")
		out, err := exec.Command(sshdBin, "-T", "-f", cfg).CombinedOutput()
		want, wantOK := printedValue(string(out), kw, err == nil, false)
		if err != nil && strings.Contains(string(out), "privilege separation directory") {
			testenv.Missing(t, "sshd's privilege separation directory /run/sshd", "mkdir /run/sshd as root")
		}
		got, _, err := runSshd("-T", "-f", cfg, "-o", "CalibrationCache=none")
		value, ok := printedValue(got, kw, err == nil, kw != "forcecommand")
		if ok != wantOK || value != want {
			t.Errorf("%q: sshd: %q (ok %v), offload: %q (ok %v, %v)", c, want, wantOK, value, ok, err)
		}
	}
}

// printedValue finds keyword kw's line in a -T dump and returns its value,
// read with offload's lexer when quoted is set.
func printedValue(dump, kw string, ok, quoted bool) (string, bool) {
	if !ok {
		return "", false
	}
	for _, l := range strings.Split(dump, "\n") {
		if v, found := strings.CutPrefix(l, kw+" "); found {
			if quoted {
				_, args, err := config.ParseLine(l)
				if err != nil || len(args) != 1 {
					return "unreadable: " + l, true
				}
				return args[0], true
			}
			return v, true
		}
	}
	return "", true
}
