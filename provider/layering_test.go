package provider_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoProvidersImports: the core names no provider implementation.
// Providers import provider, never the reverse; what the registry needs
// to know about a kind of provider it asks through an optional interface
// (Matcher, Narrower, SpecChecker, ...).
func TestNoProvidersImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the imports with")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if strings.HasPrefix(dep, "github.com/offload/offload/providers/") {
			t.Errorf("provider depends on %s", dep)
		}
	}
}
