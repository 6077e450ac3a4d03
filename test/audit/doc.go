// Package audit scans an in-process offload SSH server with ssh-audit
// (https://github.com/jtesta/ssh-audit, Debian package ssh-audit).
//
// # What it asserts
//
// With the default configuration the scanner reports no failures, no
// CVE, and no warning that OpenSSH's sshd on its own defaults does not
// draw as well: the test starts /usr/sbin/sshd beside offload (as root,
// 127.0.0.1, an Ed25519 host key), scans both and allows only the
// warnings they share (docs/security.md explains each: today
// sntrup761x25519-sha512@openssh.com, "experimental" to ssh-audit 2.5,
// and the encrypt-and-MAC hmac-sha2-256/512 that libssh2 needs). Without
// root it uses the recorded list openSSHDefaultWarnings. "Unknown
// algorithm" notes only say that the scanner is older than an algorithm
// (mlkem768x25519-sha256 and the strict-kex marker are unknown to
// ssh-audit 2.5). The server is not vulnerable to Terrapin
// (CVE-2023-48795) because it offers strict kex. The offer is
// cross-checked against the server's own list through the scanner's
// JSON output.
//
// # Running
//
// The test runs when ssh-audit is on PATH; without it the test skips,
// or fails under OFFLOAD_REQUIRE_TOOLS=1 (CI installs the package). On
// failure the scanner's full output is in the test log.
package audit
