package account

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeDB(t *testing.T, passwd, shadow string) Files {
	dir := t.TempDir()
	f := Files{Passwd: filepath.Join(dir, "passwd"), Shadow: filepath.Join(dir, "shadow")}
	os.WriteFile(f.Passwd, []byte(passwd), 0o644)
	os.WriteFile(f.Shadow, []byte(shadow), 0o600)
	return f
}

func TestLookup(t *testing.T) {
	f := writeDB(t, "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice,,,:/home/alice:/bin/sh\nbob:x:1001:1001::/home/bob:\n",
		"alice:$y$j9T$salt$hash:19000:0:99999:7:::\n")
	a, err := f.Lookup("alice")
	if err != nil {
		t.Fatal(err)
	}
	if a.UID != 1000 || a.Home != "/home/alice" || a.Shadow == nil || a.Shadow.LastChange != 19000 || a.Shadow.Expire != -1 || a.Hash() != "$y$j9T$salt$hash" {
		t.Fatalf("alice = %+v shadow %+v", a, a.Shadow)
	}
	b, err := f.Lookup("bob")
	if err != nil || b.Shadow != nil || b.LoginShell() != "/bin/sh" {
		t.Fatalf("bob = %+v, %v", b, err)
	}
	for _, name := range []string{"carol", "", "ali", "alice:x"} {
		if _, err := f.Lookup(name); !errors.Is(err, ErrNoUser) {
			t.Errorf("Lookup(%q) = %v, want ErrNoUser", name, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, l := range []string{"a:x:0:0::/", "a:x:-1:0:::/bin/sh", "a:x:0:x:::", ":x:0:0:::"} {
		if _, err := ParsePasswd(l); err == nil {
			t.Errorf("ParsePasswd(%q) succeeded", l)
		}
	}
	for _, l := range []string{"a:h:1:2:3:4:5:6", "a:h:x::::::", "a:h:-2::::::", ":h:::::::"} {
		if _, err := ParseShadow(l); err == nil {
			t.Errorf("ParseShadow(%q) succeeded", l)
		}
	}
}

func FuzzParseEntries(f *testing.F) {
	f.Add("alice:x:1000:1000:Alice:/home/alice:/bin/sh")
	f.Add("alice:$y$j9T$salt$hash:19000:0:99999:7:::")
	f.Fuzz(func(t *testing.T, line string) {
		if a, err := ParsePasswd(line); err == nil && a.Name == "" {
			t.Fatal("passwd entry without a name")
		}
		if s, err := ParseShadow(line); err == nil && (s.Name == "" || s.Expire < -1) {
			t.Fatalf("bad shadow entry %+v", s)
		}
		for _, n := range []int{7, 9} {
			scanEntries(strings.NewReader(line), "fuzz", "alice", n)
		}
	})
}

func TestVerifyPassword(t *testing.T) {
	if !cryptAvailable {
		_, err := VerifyPassword(&Account{Passwd: "$6$x$y"}, "pw", false)
		if !errors.Is(err, ErrNoCrypt) {
			t.Fatalf("without libcrypt: %v, want ErrNoCrypt", err)
		}
		return
	}
	// $6$ and $5$ from `openssl passwd -6/-5 -salt abcdefgh pw`
	for _, h := range []string{
		"$6$abcdefgh$KQeXafAQAaOoKTevphVU215RvJdgzyfASRasIOuh12hO8u0r1bGW92ZnTmC9IjsiQ8VPiTXBiZF49dFL1U4wX/",
		"$5$abcdefgh$ijtOJ//yvc/9bq1g0llFn9dB688BwBDRD90DlKKSKE1",
		mustHash(t, "pw", "$y$j9T$abcdefghijklmnop$"),
	} {
		a := &Account{Name: "u", Passwd: "x", Shadow: &Shadow{Hash: h}}
		for pw, want := range map[string]bool{"pw": true, "pW": false, "": false, "pw\x00x": false, strings.Repeat("p", 1025): false} {
			ok, err := VerifyPassword(a, pw, true)
			if err != nil || ok != want {
				t.Errorf("hash %.4s, password %.8q: %v, %v; want %v", h, pw, ok, err, want)
			}
		}
		a.Shadow.Hash = "!" + h // usermod -L
		if ok, _ := VerifyPassword(a, "pw", false); ok {
			t.Errorf("locked hash %.4s accepted", h)
		}
	}
	empty := &Account{Name: "e", Shadow: &Shadow{Hash: ""}}
	if ok, _ := VerifyPassword(empty, "", false); ok {
		t.Error("empty password accepted with PermitEmptyPasswords no")
	}
	if ok, _ := VerifyPassword(empty, "", true); !ok {
		t.Error("empty password refused with PermitEmptyPasswords yes")
	}
	if ok, _ := VerifyPassword(empty, "x", true); ok {
		t.Error("a password accepted for an empty hash")
	}
	for _, h := range []string{"*", "*LK*", "!", "!!"} {
		if ok, err := VerifyPassword(&Account{Shadow: &Shadow{Hash: h}}, "*", false); ok || err != nil {
			t.Errorf("hash %q: %v, %v", h, ok, err)
		}
	}
	if ok, err := VerifyPassword(nil, "pw", false); ok || err != nil {
		t.Errorf("invalid user: %v, %v", ok, err)
	}
}

func mustHash(t *testing.T, pw, setting string) string {
	h, err := HashPassword(pw, setting)
	if err != nil || !strings.HasPrefix(h, setting[:4]) {
		t.Fatalf("HashPassword(%s) = %q, %v", setting, h, err)
	}
	return h
}

var day0 = time.Unix(20000*86400+3600, 0) // day 20000

func TestPolicyLockExpiry(t *testing.T) {
	p := &Policy{Now: func() time.Time { return day0 }}
	sh := "/bin/sh"
	acct := func(hash string, expire int64) *Account {
		return &Account{Name: "u", Shell: sh, Shadow: &Shadow{Name: "u", Hash: hash, LastChange: 19990, Max: -1, Warn: 7, Inactive: -1, Min: 0, Expire: expire}}
	}
	cases := []struct {
		a      *Account
		reason Reason
		notice string
	}{
		{acct("$y$x", -1), "", ""},
		{acct("!$y$x", -1), Locked, ""},
		{acct("*", -1), "", ""},        // "*" is not a lock on Linux OpenSSH
		{acct("$y$x", 0), Expired, ""}, // chage -E 0
		{acct("$y$x", 19999), Expired, ""},
		{acct("$y$x", 20000), "", "Your account will expire in 0 days."},
		{acct("$y$x", 20001), "", "Your account will expire in 1 day."},
		{acct("$y$x", 20100), "", ""},
	}
	for i, c := range cases {
		notices, err := p.Allowed(c.a, Source{})
		var r *Refusal
		errors.As(err, &r)
		if (r == nil) != (c.reason == "") || (r != nil && r.Reason != c.reason) {
			t.Errorf("case %d: %v, want %q", i, err, c.reason)
		}
		if c.notice != "" && (len(notices) != 1 || notices[0] != c.notice) {
			t.Errorf("case %d: notices %q, want %q", i, notices, c.notice)
		}
	}
	r := mustRefuse(t, p, acct("$y$x", 0), Source{})
	if len(r.Log) != 2 || r.Log[0] != "Account u has expired" || r.Log[1] != "User u not allowed because account is locked" {
		t.Errorf("expired log %q", r.Log)
	}
	if _, err := (&Policy{UsePAM: true, Now: p.Now}).Allowed(acct("!x", 0), Source{}); err != nil {
		t.Errorf("with UsePAM the lock and expiry are PAM's: %v", err)
	}
}

func mustRefuse(t *testing.T, p *Policy, a *Account, src Source) *Refusal {
	t.Helper()
	_, err := p.Allowed(a, src)
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("Allowed(%s) = %v, want a refusal", a.Name, err)
	}
	return r
}

func TestPolicyShell(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	os.WriteFile(noexec, nil, 0o644)
	p := &Policy{}
	if r := mustRefuse(t, p, &Account{Name: "u", Shell: "/nonexistent"}, Source{}); r.Reason != NoShell || r.Log[0] != "User u not allowed because shell /nonexistent does not exist" {
		t.Errorf("missing shell: %+v", r)
	}
	for _, sh := range []string{noexec, dir} {
		if r := mustRefuse(t, p, &Account{Name: "u", Shell: sh}, Source{}); r.Reason != ShellNotExecutable {
			t.Errorf("shell %s: %+v", sh, r)
		}
	}
	if _, err := (&Policy{Chroot: true}).Allowed(&Account{Name: "u", Shell: "/nonexistent"}, Source{}); err != nil {
		t.Errorf("with a chroot the shell is not checked: %v", err)
	}
	if _, err := p.Allowed(&Account{Name: "u", Shell: ""}, Source{}); err != nil {
		t.Errorf("empty shell means /bin/sh: %v", err)
	}
}

func TestPolicyLists(t *testing.T) {
	groups := map[string][]string{"alice": {"alice", "wheel"}, "bob": {"bob", "users"}, "eve": nil}
	base := Policy{Groups: func(a *Account) ([]string, error) { return groups[a.Name], nil }}
	from := func(ip string) Source { return Source{Addr: netip.MustParseAddr(ip)} }
	cases := []struct {
		p      Policy
		user   string
		src    Source
		reason Reason
	}{
		{Policy{DenyUsers: []string{"bob"}}, "bob", from("10.0.0.1"), DeniedUser},
		{Policy{DenyUsers: []string{"b*"}}, "alice", from("10.0.0.1"), ""},
		{Policy{DenyUsers: []string{"*@10.0.0.0/8"}}, "alice", from("10.1.2.3"), DeniedUser},
		{Policy{DenyUsers: []string{"*@10.0.0.0/8"}}, "alice", from("192.0.2.1"), ""},
		{Policy{AllowUsers: []string{"alice"}}, "bob", from("10.0.0.1"), NotAllowedUser},
		{Policy{AllowUsers: []string{"alice@192.0.2.*"}}, "alice", from("192.0.2.9"), ""},
		{Policy{AllowUsers: []string{"alice@192.0.2.*"}}, "alice", from("198.51.100.1"), NotAllowedUser},
		{Policy{AllowUsers: []string{"alice@*,!192.0.2.9"}}, "alice", from("192.0.2.9"), NotAllowedUser},
		{Policy{AllowUsers: []string{"alice", "bob"}, DenyUsers: []string{"bob"}}, "bob", from("10.0.0.1"), DeniedUser},
		{Policy{DenyGroups: []string{"whe?l"}}, "alice", from("10.0.0.1"), DeniedGroup},
		{Policy{AllowGroups: []string{"users"}}, "alice", from("10.0.0.1"), NotAllowedGroup},
		{Policy{AllowGroups: []string{"users"}}, "bob", from("10.0.0.1"), ""},
		{Policy{AllowGroups: []string{"*"}}, "eve", from("10.0.0.1"), NoGroups},
		{Policy{AllowUsers: []string{"alice"}, AllowGroups: []string{"users"}}, "alice", from("10.0.0.1"), NotAllowedGroup},
	}
	for i, c := range cases {
		p := c.p
		p.Groups, p.UsePAM, p.Chroot = base.Groups, true, true
		_, err := p.Allowed(&Account{Name: c.user}, c.src)
		var r *Refusal
		errors.As(err, &r)
		if (r == nil) != (c.reason == "") || (r != nil && r.Reason != c.reason) {
			t.Errorf("case %d (%s from %s): %v, want %q", i, c.user, c.src.Addr, err, c.reason)
		}
	}
	p := Policy{DenyUsers: []string{"bob"}, UsePAM: true, Chroot: true}
	r := mustRefuse(t, &p, &Account{Name: "bob"}, from("10.0.0.1"))
	if r.Log[0] != "User bob from 10.0.0.1 not allowed because listed in DenyUsers" {
		t.Errorf("log %q", r.Log)
	}
}

func TestPasswordExpiry(t *testing.T) {
	p := &Policy{Now: func() time.Time { return day0 }}
	a := func(last, max int64) *Account {
		return &Account{Name: "u", Shadow: &Shadow{LastChange: last, Max: max, Warn: 7}}
	}
	for _, c := range []struct {
		a       *Account
		expired bool
		notice  string
	}{
		{a(0, -1), true, ""}, // chage -d 0
		{a(19000, 99999), false, ""},
		{a(19000, 999), true, ""},
		{a(19000, 1003), false, "Your password will expire in 3 days."},
		{a(19000, -1), false, ""},
		{&Account{Name: "u"}, false, ""},
	} {
		e := p.CheckPasswordExpiry(c.a)
		if e.Expired != c.expired || e.Notice != c.notice {
			t.Errorf("%+v: %+v", c.a.Shadow, e)
		}
	}
	if e := p.CheckPasswordExpiry(a(0, -1)); e.Log != "User u password has expired (root forced)" {
		t.Errorf("log %q", e.Log)
	}
}

func TestNologin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nologin")
	if refused, _, _ := Nologin(&Account{Name: "u", UID: 1000}, path); refused {
		t.Fatal("refused without the file")
	}
	os.WriteFile(path, []byte("System maintenance until 14:00.\n"), 0o644)
	refused, text, log := Nologin(&Account{Name: "u", UID: 1000}, path)
	if !refused || string(text) != "System maintenance until 14:00.\n" || log != "User u not allowed because "+path+" exists" {
		t.Fatalf("Nologin = %v %q %q", refused, text, log)
	}
	if refused, _, _ := Nologin(&Account{Name: "root", UID: 0}, path); refused {
		t.Fatal("root refused by nologin")
	}
}

func TestFailDelay(t *testing.T) {
	secret := []byte("0123456789abcdef")
	d := FailDelay(secret, "alice")
	if d < 5*time.Millisecond || d > 10*time.Millisecond || d != FailDelay(secret, "alice") {
		t.Fatalf("FailDelay = %v", d)
	}
	if FailDelay(secret, "alice") == FailDelay(secret, "bob") && FailDelay(secret, "bob") == FailDelay(secret, "carol") {
		t.Fatal("the delay does not depend on the user")
	}
	start := time.Now()
	WaitMinimum(context.Background(), start, d)
	if time.Since(start) < d {
		t.Fatal("WaitMinimum returned early")
	}
	// past already: doubled until in the future
	start = time.Now().Add(-3 * d / 2)
	WaitMinimum(context.Background(), start, d)
	if time.Since(start) < 2*d {
		t.Fatal("WaitMinimum did not double an exceeded delay")
	}
}
