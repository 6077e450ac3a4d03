package auth_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// AllowUsers, DenyUsers, AllowGroups and DenyGroups (with user@host
// patterns, and with "*,!name" entries OpenSSH accepts) refuse the same key logins in offload sshd as in
// OpenSSH 9.2, with OpenSSH's log line naming why.
func TestAllowDenyLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "pw-allow-1")
	group := u.Username // useradd made the user's own group
	for _, setting := range []string{
		"AllowUsers nobody-else",
		"AllowUsers " + u.Username + "@127.0.0.1",
		"AllowUsers " + u.Username + "@192.0.2.1",
		"DenyUsers " + u.Username[:4] + "*",
		"DenyUsers root " + u.Username + "@127.0.0.*",
		"AllowGroups " + group,
		"AllowGroups root",
		"DenyGroups " + group,
		"DenyGroups root",
		// A user or group part is one wildcard pattern: ',' and '!' are
		// plain characters there, so these match no real name (OpenSSH's
		// match_pattern), while the host part is a negatable list.
		"DenyUsers *,!" + u.Username,
		"AllowUsers *,!" + u.Username,
		"DenyGroups *,!" + group,
		"AllowGroups *,!" + group,
		"DenyUsers " + u.Username + "@!127.0.0.1,*",
		"DenyUsers " + u.Username + "@!192.0.2.1,*",
	} {
		lines := []string{setting, "LogLevel INFO"}
		oport, olog := openSSHD(t, f, lines...)
		d := startOffloadDaemon(t, f, nil, []string{"JOURNAL_STREAM=8:1"}, lines...) // OpenSSH's bare lines
		want, got := outcome(t, f, oport, u.Username, u.key), outcome(t, f, d.port, u.Username, u.key)
		why := regexp.MustCompile(`User \S+ from \S+ not allowed because [^\r\n]*`)
		var wantWhy, gotWhy string // each server says why it refused
		if want != "ok" {
			wantWhy = awaitLog(t, olog, why)
		}
		if got != "ok" {
			gotWhy = awaitLog(t, d.stderr, why)
		}
		t.Logf("%s: OpenSSH %q %q, offload %q %q", setting, want, wantWhy, got, gotWhy)
		if got != want || strings.TrimSpace(gotWhy) != strings.TrimSpace(wantWhy) {
			t.Errorf("%s: offload %q (%q), OpenSSH %q (%q)", setting, got, gotWhy, want, wantWhy)
		}
	}
}
