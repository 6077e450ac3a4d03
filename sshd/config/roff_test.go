package config

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const manPage = "../../docs/man/offload-sshd_config.5"

// TestManPage keeps the committed man page offload-sshd_config(5) equal to
// the one made from the keyword table (go test -run TestManPage -update
// rewrites it; go generate ./sshd/config does both references), and every
// keyword in it.
func TestManPage(t *testing.T) {
	var b bytes.Buffer
	if err := WriteManPage(&b); err != nil {
		t.Fatal(err)
	}
	want := b.String()
	for _, name := range Keywords() {
		if !strings.Contains(want, "\n.TP\n\\fB"+roffEscape(name)+"\\fR") {
			t.Errorf("the man page has no entry for %s", name)
		}
	}
	got, err := os.ReadFile(manPage)
	if *update {
		if err := os.WriteFile(manPage, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from sshd/config/table.go; run go generate ./sshd/config", manPage)
	}
}

// TestManPageRoff checks the page with groff's warnings on, as lintian
// and man do.
func TestManPageRoff(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed")
	}
	var b bytes.Buffer
	if err := WriteManPage(&b); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(groff, "-man", "-ww", "-z", "-Tutf8")
	cmd.Stdin = &b
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("groff: %v\n%s", err, out)
	}
}

func TestRoffText(t *testing.T) {
	for in, want := range map[string]string{
		"a `-T` b":          `a \fB\-T\fR b`,
		".starts with dot":  `\&.starts with dot`,
		`back\slash`:        `back\eslash`,
		"—":                 `\(em`,
		"'quote at start":   `\&'quote at start`,
		"see `x` and `y-z`": `see \fBx\fR and \fBy\-z\fR`,
	} {
		if got := roffText(in); got != want {
			t.Errorf("roffText(%q) = %q, want %q", in, got, want)
		}
	}
}
