package main

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// `offload help` lists exactly the commands of the table, on stdout, and
// exits 0; so do -h and --help.
func TestHelpListsTheCommands(t *testing.T) {
	var want []string
	for n := range commands {
		want = append(want, n)
	}
	sort.Strings(want)
	line := regexp.MustCompile(`^  ([a-z-]+) +\S`)
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, out, errs := runCmd(t, args...)
		if code != 0 || errs != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
		}
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if m := line.FindStringSubmatch(l); m != nil {
				got = append(got, m[1])
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v lists %q, the commands are %q:\n%s", args, got, want, out)
		}
	}
	// the package documentation lists them too
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(want, "help") {
		if !strings.Contains(string(src), "//\toffload "+n+" ") {
			t.Errorf("main.go's package documentation does not list %q", n)
		}
	}
	if code, _, _ := runCmd(t); code != 2 {
		t.Errorf("offload without a command: exit %d, want 2", code)
	}
}

// `offload help COMMAND` prints the command's flags on stdout and exits
// 0; an unknown command exits 2.
func TestHelpCommand(t *testing.T) {
	for name := range commands {
		code, out, errs := runCmd(t, "help", name)
		if code != 0 || out == "" {
			t.Errorf("help %s: exit %d, stdout %q, stderr %q", name, code, out, errs)
		}
	}
	if code, out, _ := runCmd(t, "help", "sshd"); code != 0 || !strings.Contains(out, "-f file") {
		t.Errorf("help sshd: exit %d:\n%s", code, out)
	}
	if code, _, errs := runCmd(t, "help", "frobnicate"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Errorf("help frobnicate: exit %d, %q", code, errs)
	}
}

// The keys summary and usage name exactly the keys sub-commands that
// exist (once it listed "show", which is "pub").
func TestKeysHelpNamesItsCommands(t *testing.T) {
	code, out, _ := runCmd(t, "help", "keys")
	if code != 0 {
		t.Fatalf("help keys: exit %d", code)
	}
	for _, sub := range keysCommands {
		if !strings.Contains(out, "\n  "+sub+" ") {
			t.Errorf("keys usage lacks %q:\n%s", sub, out)
		}
		if !strings.Contains(commands["keys"].summary, sub) {
			t.Errorf("keys summary %q lacks %q", commands["keys"].summary, sub)
		}
		if code, _, errs := runCmd(t, "help", "keys", sub); code != 0 || strings.Contains(errs, "unknown") {
			t.Errorf("help keys %s: exit %d, %q", sub, code, errs)
		}
	}
	sub := regexp.MustCompile(`(?m)^  ([a-z]+) `)
	for _, m := range sub.FindAllStringSubmatch(keysUsage, -1) {
		if !slices.Contains(keysCommands, m[1]) {
			t.Errorf("keys usage names %q, which is not a keys command", m[1])
		}
	}
	if strings.Contains(commands["keys"].summary, "show") {
		t.Errorf("keys summary names show: %q", commands["keys"].summary)
	}
}
