// Package testenv decides whether tests that need outside tools (SoftHSM,
// OpenSSH, p11-kit, ssh-audit) run, skip or fail.
//
// # Required tools
//
// Locally a missing tool skips the test with a message naming it. When
// OFFLOAD_REQUIRE_TOOLS=1 (CI sets it) a missing tool fails the test, so CI
// can never pass by skipping.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// RequireEnv is the variable that turns skips for missing tools into failures.
const RequireEnv = "OFFLOAD_REQUIRE_TOOLS"

// Required reports whether missing tools must fail tests.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Missing skips t, or fails it when tools are required, saying what is
// missing and how to get it.
func Missing(t testing.TB, what, hint string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s is missing and %s=1 requires it (%s)", what, RequireEnv, hint)
	}
	t.Skipf("skipping: %s is missing (%s); set %s=1 to make this a failure", what, hint, RequireEnv)
}

// LookPath returns the path of an executable, or skips/fails t as Missing does.
func LookPath(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, hint)
	}
	return p
}

// FirstFile returns the first of paths that exists, or skips/fails t.
func FirstFile(t testing.TB, what, hint string, paths ...string) string {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	Missing(t, what, hint)
	return ""
}
