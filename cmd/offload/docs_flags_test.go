package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// flagToken is a flag as usage texts write it: -name, or a cluster of
// one-letter flags (-ehR).
var flagToken = regexp.MustCompile(`(?:^|[\s\[|])(-[A-Za-z][A-Za-z0-9-]*)`)

// usageFlags runs `offload ARGS... -h` and returns the flags its usage
// text names.
func usageFlags(t *testing.T, args ...string) []string {
	t.Helper()
	var out, errb bytes.Buffer
	run(context.Background(), append(args, "-h"), &out, &errb)
	seen := map[string]bool{}
	var flags []string
	for _, m := range flagToken.FindAllStringSubmatch(out.String()+errb.String(), -1) {
		f := m[1]
		if f == "-h" || seen[f] {
			continue
		}
		seen[f] = true
		flags = append(flags, f)
	}
	return flags
}

// TestDocsNameEveryCommandAndFlag: README.md's command list and the man
// pages name every command of `offload help` and every flag each command's
// -h prints, so the docs cannot fall behind the code.
func TestDocsNameEveryCommandAndFlag(t *testing.T) {
	readme := readDoc(t, "../../README.md")
	man1 := readDoc(t, "../../docs/man/offload.1")
	man8 := readDoc(t, "../../docs/man/offload-sshd.8")
	for name := range commands {
		if !strings.Contains(readme, "offload "+name) {
			t.Errorf("README.md does not name the command offload %s", name)
		}
		if !strings.Contains(man1, ".B "+roff(name)) && !strings.Contains(man1, ".B offload "+roff(name)) {
			t.Errorf("offload(1) has no entry for %s", name)
		}
		man := man1
		if name == "sshd" {
			man = man8
		}
		args := [][]string{{name}}
		if name == "keys" {
			args = nil
			for _, sub := range keysCommands {
				args = append(args, []string{name, sub})
			}
		}
		for _, a := range args {
			for _, f := range usageFlags(t, a...) {
				if !strings.Contains(readme, f) {
					t.Errorf("README.md does not name %s of offload %s", f, strings.Join(a, " "))
				}
				if !strings.Contains(man, roff(f)) {
					t.Errorf("the man page of offload %s does not name %s", strings.Join(a, " "), f)
				}
			}
		}
	}
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func roff(s string) string { return strings.ReplaceAll(s, "-", `\-`) }
