package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInclude(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"sshd_config":          "MaxAuthTries 2\nInclude conf.d/*.conf empty.d/*.conf\nMaxSessions 9\nHostKey /main\n",
		"conf.d/10-a.conf":     "MaxSessions 3\nHostKey /a\n",
		"conf.d/20-b.conf":     "MaxSessions 4\nMaxAuthTries 5\nInclude ../more/x.conf\n",
		"more/x.conf":          "AcceptEnv LANG\n",
		"empty.d/.placeholder": "",
	})
	c, err := Load(filepath.Join(dir, "sshd_config"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Lines count in reading order: the first MaxSessions is 10-a's.
	if c.MaxAuthTries != 2 || c.MaxSessions != 3 || len(c.AcceptEnv) != 1 {
		t.Errorf("MaxAuthTries %d MaxSessions %d AcceptEnv %v", c.MaxAuthTries, c.MaxSessions, c.AcceptEnv)
	}
	if strings.Join(c.HostKeys, " ") != "/a /main" {
		t.Errorf("HostKeys %v", c.HostKeys)
	}
}

func TestIncludeErrors(t *testing.T) {
	cases := []struct {
		files   map[string]string
		file    string // the file the error names, relative to dir
		line    int
		keyword string
		msg     string
	}{
		{map[string]string{"sshd_config": "Port 22\nInclude missing.conf\n"}, "sshd_config", 2, "Include", "does not exist"},
		{map[string]string{"sshd_config": "Include\n"}, "sshd_config", 1, "Include", "missing argument"},
		{map[string]string{"sshd_config": "Include a.conf\n", "a.conf": "\n\nMaxSessions x\n"}, "a.conf", 3, "MaxSessions", "not an integer"},
		{map[string]string{"sshd_config": "Include sshd_config\n"}, "sshd_config", 1, "Include", "Include loop"},
		{map[string]string{"sshd_config": "Include a\n", "a": "Include b\n", "b": "Include a\n"}, "b", 1, "Include", "Include loop"},
		{deepIncludes(20), "f16", 1, "Include", "deeper than 16"},
		{map[string]string{"sshd_config": "Match User x\nInclude a\n", "a": "Port 2\n"}, "a", 1, "Port", "not allowed within a Match block"},
		{map[string]string{"sshd_config": "Include d\n", "d/x": ""}, "sshd_config", 1, "Include", "not a regular file"},
	}
	for _, tc := range cases {
		dir := writeFiles(t, tc.files)
		_, err := Load(filepath.Join(dir, "sshd_config"), nil)
		var le *LineError
		if !errors.As(err, &le) || le.File != filepath.Join(dir, tc.file) || le.Line != tc.line || le.Keyword != tc.keyword ||
			!strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: err = %v", tc.files, err)
		}
	}
	_, err := Parse("f", strings.NewReader("Include /dev/null\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Include /dev/null: %v", err)
	}
	_, err = Parse("f", nil, []string{"Include=/etc/x"})
	if !errors.Is(err, ErrNotImplemented) {
		t.Errorf("Include in -o: %v", err)
	}
}

// deepIncludes makes sshd_config include f1, which includes f2, ...
func deepIncludes(n int) map[string]string {
	files := map[string]string{"sshd_config": "Include f1\n"}
	for i := 1; i < n; i++ {
		files[fmt.Sprintf("f%d", i)] = fmt.Sprintf("Include f%d\n", i+1)
	}
	files[fmt.Sprintf("f%d", n)] = "Port 2\n"
	return files
}

// TestIncludeInMatch ports OpenSSH's regress servcfginclude: an Include
// inside a Match block reads its files under that block; a Match inside
// an included file ends with the file; an included file's Match inside a
// non-matching block never applies.
func TestIncludeInMatch(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"sshd_config": "MaxSessions 10\nMatch User alice\nInclude alice.d/*.conf\nMaxAuthTries 3\n" +
			"Match User bob\nInclude bob.conf\nMatch all\nInclude tail.conf\n",
		"alice.d/1.conf": "MaxSessions 1\nMatch Address 10.0.0.0/8\nBanner /etc/internal\n",
		"alice.d/2.conf": "ClientAliveInterval 7\n",
		"bob.conf":       "Match all\nMaxSessions 5\n",
		"tail.conf":      "AcceptEnv TAIL\n",
	})
	c, err := Load(filepath.Join(dir, "sshd_config"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxSessions != 10 || c.Banner != "" || !slices.Equal(c.AcceptEnv, []string{"TAIL"}) {
		t.Errorf("global: MaxSessions %d Banner %q AcceptEnv %v", c.MaxSessions, c.Banner, c.AcceptEnv)
	}
	type want struct {
		sessions, tries int
		banner          string
		alive           time.Duration
	}
	for _, tc := range []struct {
		ci ConnInfo
		w  want
	}{
		{ConnInfo{User: "alice", Addr: "10.1.1.1"}, want{1, 3, "/etc/internal", 7 * time.Second}},
		{ConnInfo{User: "alice", Addr: "192.0.2.1"}, want{1, 3, "", 7 * time.Second}},
		{ConnInfo{User: "bob", Addr: "10.1.1.1"}, want{5, 6, "", 0}},
		{ConnInfo{User: "carol", Addr: "10.1.1.1"}, want{10, 6, "", 0}},
	} {
		ci, w := tc.ci, tc.w
		e, err := c.ForConnection(ci)
		if err != nil {
			t.Fatal(err)
		}
		got := want{e.MaxSessions, e.MaxAuthTries, e.Banner, e.ClientAliveInterval}
		if got != w {
			t.Errorf("%s from %s: %+v, want %+v", ci.User, ci.Addr, got, w)
		}
	}
}
