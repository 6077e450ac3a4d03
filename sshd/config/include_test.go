package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{map[string]string{"sshd_config": "Include sshd_config\n"}, "sshd_config", 1, "Include", "deeper than 16"},
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
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("Include in -o: %v", err)
	}
}
