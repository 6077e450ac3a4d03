package sftp

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

func mode(m fs.FileMode) *fs.FileMode { return &m }

func TestParseCommand(t *testing.T) {
	for cmd, want := range map[string]Options{
		"internal-sftp":                     {},
		"internal-sftp -R":                  {ReadOnly: true},
		"internal-sftp -Rel INFO -f local5": {ReadOnly: true, Stderr: true, LogLevel: "INFO", Facility: "LOCAL5"},
		"internal-sftp -u 027 -d /srv/%u":   {Umask: mode(0o27), StartDir: "/srv/%u"},
		"internal-sftp -u0 -ldebug3":        {Umask: mode(0), LogLevel: "DEBUG3"},
		"internal-sftp -p open,read,close,realpath,stat,lstat,opendir,readdir": {
			Allow: []string{"open", "read", "close", "realpath", "stat", "lstat", "opendir", "readdir"}},
		"internal-sftp -P remove,rmdir -- ":         {Deny: []string{"remove", "rmdir"}},
		`internal-sftp -d "/srv/my files"`:          {StartDir: "/srv/my files"},
		`internal-sftp -d /srv/a\ b # a comment -R`: {StartDir: "/srv/a b"},
		"/usr/lib/openssh/sftp-server -R":           {ReadOnly: true},
	} {
		got, err := ParseCommand(cmd)
		if err != nil {
			t.Errorf("%q: %v", cmd, err)
			continue
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("%q: %+v, want %+v", cmd, *got, want)
		}
	}
}

func TestParseCommandErrors(t *testing.T) {
	for cmd, msg := range map[string]string{
		"internal-sftp -x":              "unknown flag",
		"internal-sftp -u":              "needs a value",
		"internal-sftp -u 0999":         "octal",
		"internal-sftp -u 01000":        "octal",
		"internal-sftp -l LOUD":         "log level",
		"internal-sftp -f KERN":         "facility",
		"internal-sftp -p open,nuke":    "unknown request",
		"internal-sftp -P open -P read": "given twice",
		"internal-sftp -Q requests":     "unknown flag",
		"internal-sftp -h":              "usage",
		"internal-sftp extra":           "unexpected argument",
		`internal-sftp -d "/srv`:        "unterminated quote",
		"":                              "empty command",
	} {
		_, err := ParseCommand(cmd)
		var ae *ArgsError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want an ArgsError about %q", cmd, err, msg)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	for in, want := range map[string][]string{
		`a b  c`:         {"a", "b", "c"},
		`a 'b c' "d e"`:  {"a", "b c", "d e"},
		`a "it's" 'x"y'`: {"a", "it's", `x"y`},
		`a\ b c\\d \'q`:  {"a b", `c\d`, "'q"},
		`x # rest`:       {"x"},
		`x a#b '#c'`:     {"x", "a#b", "#c"},
		`"" a`:           {"", "a"},
		"\ta\t":          {"a"},
		"a\nb":           {"a\nb"}, // a newline is no blank, as for OpenSSH
		`a\zb`:           {`a\zb`},
	} {
		got, err := SplitArgs(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitArgs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestExpandStartDir(t *testing.T) {
	for in, want := range map[string]string{
		"/srv/%u":     "/srv/alice",
		"%d/pub":      "/home/alice/pub",
		"~":           "/home/alice",
		"~/in":        "/home/alice/in",
		"/u/%U/100%%": "/u/1001/100%",
	} {
		got, err := expandStartDir(in, "/home/alice", "alice", 1001)
		if err != nil || got != want {
			t.Errorf("expand %q = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/srv/%x", "/srv/%"} {
		if _, err := expandStartDir(bad, "/h", "u", 1); err == nil {
			t.Errorf("expand %q: no error", bad)
		}
	}
}

func TestRequestsTable(t *testing.T) {
	names := Requests()
	if len(names) != len(requests) || names[0] != "open" || names[len(names)-1] != "users-groups-by-id" {
		t.Errorf("Requests() = %v", names)
	}
	seen := map[string]bool{}
	for _, r := range requests {
		if seen[r.name] || r.serve == nil || (r.typ == fxpExtended) != (r.ext != "") {
			t.Errorf("bad table entry %+v", r)
		}
		seen[r.name] = true
	}
	// What -R refuses, as OpenSSH's does_write (open is checked per mode).
	var writes []string
	for _, r := range requests {
		if r.writes {
			writes = append(writes, r.name)
		}
	}
	want := "[write setstat fsetstat remove mkdir rmdir rename symlink posix-rename hardlink fsync lsetstat copy-data]"
	if fmt.Sprint(writes) != want {
		t.Errorf("write requests %v, want %s", writes, want)
	}
}

// FuzzParseCommand feeds arbitrary command lines to the flag parser.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"internal-sftp -R -u 022 -d '/srv/%u' -l INFO -f AUTH", `a "b\" c" 'd`, "x -p open,read -P write", "x -u", "x #"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		o, err := ParseCommand(cmd)
		if err != nil {
			var ae *ArgsError
			if !errors.As(err, &ae) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if o.Umask != nil && *o.Umask > 0o777 {
			t.Fatalf("umask %o", *o.Umask)
		}
		for _, n := range append(o.Allow, o.Deny...) {
			if lookupName(n) == nil {
				t.Fatalf("unknown name %q accepted", n)
			}
		}
		if _, err := parseLevel(o.LogLevel); err != nil {
			t.Fatalf("level %q accepted: %v", o.LogLevel, err)
		}
		expandStartDir(o.StartDir, "/h", "u", 1)
	})
}
