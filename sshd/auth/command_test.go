package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/offload/offload/internal/testenv"
)

// commandDir is a root-owned directory outside /tmp (whose sticky,
// world-writable mode fails OpenSSH's safe-path check, rightly) for
// throwaway command scripts.
func commandDir(t *testing.T) string {
	t.Helper()
	testenv.Root(t)
	dir := filepath.Join("/run", testenv.UniqueName("oftcmd"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAuthorizedKeysCommand(t *testing.T) {
	dir := commandDir(t)
	key := newEd25519(t)
	out := filepath.Join(dir, "args")
	os.WriteFile(out, nil, 0o666)
	os.Chmod(out, 0o666)
	keyLine := authLine(`command="echo from-cmd"`, key.PublicKey())
	cmd := script(t, dir, "keys", `echo "$(id -un) $*" > `+out+`; echo '`+keyLine+`'`)

	w := newWorld(t)
	w.cfg.AuthorizedKeysCommand = cmd + " %u %U %t %f %h %% %k"
	w.cfg.AuthorizedKeysCommandUser = "nobody"
	c, ch := startRun(t, w.cfg)
	c.startService()
	p := wantSuccess(t, c.signed("ssh-ed25519", key), ch)
	if p.ForceCommand != "echo from-cmd" {
		t.Fatalf("permissions %+v: the command's options were not applied", p)
	}
	got, _ := os.ReadFile(out)
	want := "nobody alice " + uid + " ssh-ed25519 " + ssh.FingerprintSHA256(key.PublicKey()) + " " + w.home + " % " +
		strings.Fields(string(ssh.MarshalAuthorizedKey(key.PublicKey())))[1]
	if strings.TrimSpace(string(got)) != want {
		t.Fatalf("command ran as and with %q, want %q", got, want)
	}
}

func TestAuthorizedKeysCommandFailures(t *testing.T) {
	dir := commandDir(t)
	key := newEd25519(t)
	line := authLine("", key.PublicKey())
	unsafeDir := filepath.Join(dir, "unsafe")
	os.Mkdir(unsafeDir, 0o777)
	os.Chmod(unsafeDir, 0o777)
	cases := map[string]struct{ cmd, log string }{
		"exit status": {script(t, dir, "fail", "echo '"+line+"'; exit 3"), "exit status 3"},
		"timeout":     {script(t, dir, "slow", "sleep 30; echo '"+line+"'"), "timed out"},
		"huge":        {script(t, dir, "huge", "yes '"+line+"'"), "too large"},
		"unsafe path": {script(t, unsafeDir, "keys", "echo '"+line+"'"), "writable by group or others"},
	}
	for name, c := range cases {
		w := newWorld(t)
		w.cfg.AuthorizedKeysCommand, w.cfg.AuthorizedKeysCommandUser = c.cmd, "nobody"
		// Only the timeout case times out: the others must fail for their
		// own reason however slowly a loaded machine starts the command
		// (with 500 ms for all, "huge" once timed out before it was too
		// large, at load 9).
		w.cfg.CommandTimeout = time.Minute
		if name == "timeout" {
			w.cfg.CommandTimeout = 500 * time.Millisecond
		}
		cl, _ := startRun(t, w.cfg)
		cl.startService()
		start := time.Now()
		wantFailure(t, cl.signed("ssh-ed25519", key), "publickey")
		if !w.logged(c.log) {
			t.Errorf("%s: log lacks %q:\n%s", name, c.log, w.logs)
		}
		// The slow command sleeps 30 s: ending before that is the proof
		// that the timeout stopped it, with no bound on the machine's speed.
		if d := time.Since(start); name == "timeout" && d >= 30*time.Second {
			t.Errorf("%s: took %v, as long as the command", name, d)
		}
	}
}

func TestAuthorizedPrincipalsCommand(t *testing.T) {
	dir := commandDir(t)
	ca, key := newEd25519(t), newEd25519(t)
	signer, _ := makeCert(t, ca, key, func(c *ssh.Certificate) { c.ValidPrincipals = []string{"ops-team"}; c.KeyId = "kid-9"; c.Serial = 99 })
	out := filepath.Join(dir, "args")
	os.WriteFile(out, nil, 0o666)
	os.Chmod(out, 0o666)
	cmd := script(t, dir, "principals", `echo "$*" > `+out+`; echo ops-team`)
	w := newWorld(t)
	w.trustCA(ca)
	w.cfg.AuthorizedPrincipalsCommand = cmd + " %u %i %s %T %F"
	w.cfg.AuthorizedPrincipalsCommandUser = "nobody"
	if p := certLogin(t, w, signer); p == nil {
		t.Fatalf("certificate refused\n%s", w.logs)
	}
	got, _ := os.ReadFile(out)
	want := "alice kid-9 99 ssh-ed25519 " + ssh.FingerprintSHA256(ca.PublicKey())
	if strings.TrimSpace(string(got)) != want {
		t.Fatalf("arguments %q, want %q", got, want)
	}
	w.cfg.AuthorizedPrincipalsCommand = script(t, dir, "nobody-fits", "echo someone-else")
	if certLogin(t, w, signer) != nil {
		t.Fatal("certificate accepted without its principal")
	}
}

func TestCommandValidate(t *testing.T) {
	for _, c := range []Config{
		{AuthorizedKeysCommand: "relative/keys", AuthorizedKeysCommandUser: "nobody"},
		{AuthorizedKeysCommand: "/usr/bin/keys"},
		{AuthorizedKeysCommand: "/usr/bin/keys %i", AuthorizedKeysCommandUser: "nobody"},
		{AuthorizedKeysCommand: `/usr/bin/keys "unterminated`, AuthorizedKeysCommandUser: "nobody"},
		{AuthorizedPrincipalsCommand: "/usr/bin/p %Z", AuthorizedPrincipalsCommandUser: "nobody"},
	} {
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	ok := Config{AuthorizedKeysCommand: "/usr/bin/keys %u '%f x' \"a b\" %C %D", AuthorizedKeysCommandUser: "nobody",
		AuthorizedPrincipalsCommand: "/usr/bin/p %C %D %i", AuthorizedPrincipalsCommandUser: "nobody"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	args, _ := splitArgs(`/bin/x a\ b "c d" 'e\f'`)
	if strings.Join(args, "|") != `/bin/x|a b|c d|e\f` {
		t.Fatalf("splitArgs: %q", args)
	}
}
