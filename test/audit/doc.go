// Package audit scans an in-process offload SSH server with ssh-audit
// (https://github.com/jtesta/ssh-audit, Debian package ssh-audit).
//
// # What it asserts
//
// With the default configuration the scanner reports no failures and
// no warnings except "unknown algorithm" notes, which only say that the
// scanner is older than an algorithm (mlkem768x25519-sha256 and the
// strict-kex marker are unknown to ssh-audit 2.5); no CVE applies; and
// the server is not vulnerable to Terrapin (CVE-2023-48795) because it
// offers strict kex. The offer is cross-checked against the server's
// own list through the scanner's JSON output.
//
// # Running
//
// The test runs when ssh-audit is on PATH; without it the test skips,
// or fails under OFFLOAD_REQUIRE_TOOLS=1 (CI installs the package). On
// failure the scanner's full output is in the test log.
package audit
