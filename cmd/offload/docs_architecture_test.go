package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureListsEveryServerPackage: the layer list of
// docs/architecture.md names every package under sshd/ (those with
// non-test Go files) and nothing that is not one.
func TestArchitectureListsEveryServerPackage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(sshd(?:/[a-z0-9]+)*) {2,}`).FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = true
	}
	real := serverPackages(t)
	for p := range real {
		if !listed[p] {
			t.Errorf("docs/architecture.md does not list %s", p)
		}
	}
	for p := range listed {
		if !real[p] {
			t.Errorf("docs/architecture.md lists %s, which is not a package", p)
		}
	}
}

// serverPackages are the directories under sshd/ with Go source other
// than tests, as "sshd/...".
func serverPackages(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir("../../sshd", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if strings.Contains(path, "/testdata/") || strings.Contains(path, "/internal/") {
			return nil
		}
		rel, _ := filepath.Rel("../..", filepath.Dir(path))
		out[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
