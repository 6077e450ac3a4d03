package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
	"github.com/offload/offload/sshd/config"
)

// TestEveryDebianKeywordKnown takes the keywords Debian's OpenSSH sshd
// knows from the binary itself (each lower-case word in it that sshd -t
// does not call a bad configuration option) and checks offload knows
// each one: implemented, refused with a message, or warned about as sshd
// warns; never "unknown keyword", which stops an administrator's old
// configuration from starting.
func TestEveryDebianKeywordKnown(t *testing.T) {
	sshdBin := testenv.FirstFile(t, "OpenSSH sshd", "apt-get install openssh-server", "/usr/sbin/sshd")
	bin, err := os.ReadFile(sshdBin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key := writeHostKey(t, dir)
	n := 0
	for _, word := range lowerWords(bin) {
		cfg := writeFileT(t, dir, "sshd_config", "HostKey "+key+"\n"+word+" yes\n")
		out, _ := exec.Command(sshdBin, "-t", "-f", cfg).CombinedOutput()
		if strings.Contains(string(out), "privilege separation directory") {
			testenv.Missing(t, "sshd's privilege separation directory /run/sshd", "mkdir /run/sshd as root")
		}
		if strings.Contains(string(out), "Bad configuration option") {
			continue
		}
		n++
		if _, err := config.Parse("test", strings.NewReader(word+" yes\n"), nil); errors.Is(err, config.ErrUnknownKeyword) {
			t.Errorf("%s: sshd knows it (%q), offload: %v", word, strings.TrimSpace(string(out)), err)
		}
	}
	if n < 90 {
		t.Fatalf("only %d keywords found in %s", n, sshdBin)
	}
}

// lowerWords returns the distinct NUL-terminated strings of b made of 4
// to 40 lower-case letters and digits, starting with a letter: the form
// of the names in sshd's keyword table.
func lowerWords(b []byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range bytes.Split(b, []byte{0}) {
		if len(s) < 4 || len(s) > 40 || s[0] < 'a' || s[0] > 'z' {
			continue
		}
		ok := true
		for _, c := range s {
			ok = ok && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9')
		}
		if ok && !seen[string(s)] {
			seen[string(s)] = true
			out = append(out, string(s))
		}
	}
	return out
}
