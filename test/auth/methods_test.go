package auth_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// TestAuthenticationMethodsLikeOpenSSH logs in with the OpenSSH client
// under several AuthenticationMethods settings — two lists, a list that
// starts with a password, a key twice, "any" — with each order of methods
// a client may try, against OpenSSH's sshd and the real offload sshd
// (privilege separation: the monitor keeps the partial successes), with
// UsePAM yes (Debian's /etc/pam.d/sshd: keyboard-interactive asks for the
// password through pam_unix), and wants the same outcome from both.
func TestAuthenticationMethodsLikeOpenSSH(t *testing.T) {
	testenv.Root(t)
	f := newFixture(t)
	u := newAccountUser(t, f, "am-Secret-1")
	second := f.keygen("id_second", "ed25519")
	appendAuthorizedKey(t, u, second+".pub")
	ask := askpass(t, f.dir, "am-Secret-1", "000000")
	settings := []string{
		"publickey,password publickey,keyboard-interactive",
		"password,publickey",
		"publickey,publickey",
		"any",
	}
	clients := []struct {
		methods string
		keys    []string
	}{
		{"publickey", []string{u.key}},
		{"password", nil},
		{"keyboard-interactive", nil},
		{"publickey,password", []string{u.key}},
		{"publickey,keyboard-interactive", []string{u.key}},
		{"password,publickey", []string{u.key}},
		{"publickey", []string{u.key, second}},
	}
	for _, am := range settings {
		lines := []string{"UsePAM yes", "PasswordAuthentication yes", "KbdInteractiveAuthentication yes", "AuthenticationMethods " + am}
		oport, olog := openSSHD(t, f, lines...)
		d := startOffloadDaemon(t, f, nil, nil, lines...)
		for _, c := range clients {
			var extra []string
			for _, k := range c.keys {
				extra = append(extra, "-i", k)
			}
			want, _ := interactiveLogin(t, f, oport, u.Username, ask, c.methods, extra...)
			got, out := interactiveLogin(t, f, d.port, u.Username, ask, c.methods, extra...)
			name := c.methods + " with " + map[int]string{0: "no key", 1: "one key", 2: "two keys"}[len(c.keys)]
			t.Logf("AuthenticationMethods %s, client %s: OpenSSH %v, offload %v", am, name, want, got)
			if got != want {
				t.Errorf("AuthenticationMethods %s, client %s: offload logged in %v, OpenSSH %v\n%s\nOpenSSH:\n%s\noffload:\n%s",
					am, name, got, want, out, olog, d.stderr)
			}
		}
	}
}

// appendAuthorizedKey adds the public key file pub to u's authorized_keys
// (appended: the file keeps its owner and mode).
func appendAuthorizedKey(t *testing.T, u *accountUser, pub string) {
	t.Helper()
	b, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	af, err := os.OpenFile(filepath.Join(u.HomeDir, ".ssh", "authorized_keys"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer af.Close()
	if _, err := af.Write(b); err != nil {
		t.Fatal(err)
	}
}
