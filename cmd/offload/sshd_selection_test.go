package main

import (
	"strings"
	"testing"
)

// TestSshdTCipherSelection: -T prints the cipher selection, measured by
// default, and a comment with what a steer compares, or that the client's
// order picks.
func TestSshdTCipherSelection(t *testing.T) {
	cfg := writeConfig(t, "")
	for _, tc := range []struct{ opt, line, comment string }{
		{"", "\ncipherselection measured\n", "\n# cipherselection measured: steers a client to a cipher scored over 1.3x its own choice; scores chacha20-poly1305@openssh.com "},
		{"CipherSelection=client", "\ncipherselection client\n", "\n# cipherselection client: the client's order picks the cipher\n"},
	} {
		args := []string{"-T", "-f", cfg}
		if tc.opt != "" {
			args = append(args, "-o", tc.opt)
		}
		out, _, err := runSshd(args...)
		if err != nil || !strings.Contains(out, tc.line) || !strings.Contains(out, tc.comment) {
			t.Errorf("-T %q: %v; want %q and %q in\n%s", tc.opt, err, tc.line, tc.comment, out)
		}
	}
}
