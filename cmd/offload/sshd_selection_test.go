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
		{"", "\ncipherselection measured\n", "\n# cipherselection measured: steers a client to a cipher scored over 1.3x its own choice (the scores: "},
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

// TestSshdTStable: with a calibration cache, -T prints the same text each
// time, although the cipher scores are measured at each start (OpenSSH's
// regress cfgparse feeds -T's output back and compares).
func TestSshdTStable(t *testing.T) {
	args := []string{"-T", "-f", writeConfig(t, ""), "-o", "CalibrationCache=" + t.TempDir()}
	first, _, err := runSshd(args...)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		again, _, err := runSshd(args...)
		if err != nil || again != first {
			t.Fatalf("-T changed between runs (%v):\n%s\n---\n%s", err, first, again)
		}
	}
}
