//go:build cgo && !nopam && linux

package pam

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/offload/offload/internal/testenv"
)

// service writes a throwaway PAM service file to /etc/pam.d and returns
// a Config naming it.
func service(t *testing.T, lines ...string) Config {
	t.Helper()
	return Config{Service: testenv.PAMService(t, "oftpam", strings.Join(lines, "\n")+"\n")}
}

var unixStack = []string{
	"auth required pam_unix.so",
	"account required pam_unix.so",
	"session required pam_unix.so",
}

// password answers every prompt with pw and records the messages.
type recorder struct {
	answer string
	msgs   []Message
}

func (r *recorder) conv(_ context.Context, m Message) (string, error) {
	r.msgs = append(r.msgs, m)
	if m.Style.IsPrompt() {
		return r.answer, nil
	}
	return "", nil
}

func start(t *testing.T, cfg Config, user string) *Handle {
	t.Helper()
	h, err := Start(cfg, user, Items{RemoteHost: "127.0.0.1", TTY: "ssh"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.End() })
	return h
}

func TestAuthenticatePassword(t *testing.T) {
	cfg := service(t, unixStack...)
	u := testenv.NewUser(t)
	testenv.SetPassword(t, u.Username, "right horse battery")
	ctx := context.Background()

	r := &recorder{answer: "right horse battery"}
	h := start(t, cfg, u.Username)
	if err := h.Authenticate(ctx, r.conv, DisallowNullAuthtok); err != nil {
		t.Fatalf("right password: %v", err)
	}
	if len(r.msgs) != 1 || r.msgs[0].Style != PromptEchoOff {
		t.Fatalf("messages %+v, want one echo-off prompt", r.msgs)
	}
	if err := h.AcctMgmt(ctx, r.conv, 0); err != nil {
		t.Fatalf("account: %v", err)
	}

	h2 := start(t, cfg, u.Username)
	err := h2.Authenticate(ctx, (&recorder{answer: "wrong"}).conv, DisallowNullAuthtok)
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong password: %v, want ErrAuth", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("error %q contains the password", err)
	}
}

func TestAcctMgmtExpired(t *testing.T) {
	cfg := service(t, unixStack...)
	for _, c := range []struct {
		chage []string
		want  error
	}{
		{[]string{"-E", "0"}, ErrAcctExpired},
		{[]string{"-d", "0"}, ErrNewAuthtokRequired},
	} {
		u := testenv.NewUser(t)
		testenv.SetPassword(t, u.Username, "pw-"+u.Username)
		testenv.Run(t, "chage", append(c.chage, u.Username)...)
		h := start(t, cfg, u.Username)
		err := h.AcctMgmt(context.Background(), (&recorder{}).conv, 0)
		if !errors.Is(err, c.want) {
			t.Errorf("chage %v: AcctMgmt = %v, want %v", c.chage, err, c.want)
		}
	}
}

func TestConversationBounds(t *testing.T) {
	cfg := service(t, unixStack...)
	cfg.MaxResponseLen = 16
	u := testenv.NewUser(t)
	ctx := context.Background()
	expired, cancel := context.WithCancel(ctx)
	cancel()
	for name, c := range map[string]struct {
		ctx  context.Context
		conv Conversation
	}{
		"too long": {ctx, (&recorder{answer: strings.Repeat("x", 17)}).conv},
		"nul":      {ctx, (&recorder{answer: "a\x00b"}).conv},
		"deadline": {expired, (&recorder{answer: "x"}).conv},
		"no conv":  {ctx, nil},
		"conv err": {ctx, func(context.Context, Message) (string, error) { return "", errors.New("client gone") }},
	} {
		h := start(t, cfg, u.Username)
		err := h.Authenticate(c.ctx, c.conv, 0)
		var e *Error
		if !errors.As(err, &e) || e.Conv == nil || !errors.Is(err, ErrConversation) {
			t.Errorf("%s: %v, want a conversation failure", name, err)
		}
	}
}

// pam_oath as a second factor, asked through a Dialog as a
// keyboard-interactive client would be.
func TestOATHDialog(t *testing.T) {
	testenv.FirstFile(t, "pam_oath.so", "Debian package libpam-oath", "/usr/lib/x86_64-linux-gnu/security/pam_oath.so", "/lib/x86_64-linux-gnu/security/pam_oath.so", "/usr/lib/security/pam_oath.so")
	oathtool := testenv.LookPath(t, "oathtool", "Debian package oathtool")
	u := testenv.NewUser(t)
	testenv.SetPassword(t, u.Username, "first factor")
	dir := t.TempDir()
	const key = "3132333435363738393031323334353637383930"
	users := filepath.Join(dir, "users.oath")
	os.WriteFile(users, []byte(fmt.Sprintf("HOTP %s - %s\n", u.Username, key)), 0o600)
	cfg := service(t, "auth requisite pam_unix.so", "auth required pam_oath.so usersfile="+users+" window=5", "account required pam_unix.so")
	out, err := exec.Command(oathtool, "-c", "0", key).Output()
	if err != nil {
		t.Fatal(err)
	}
	answers := []string{"first factor", strings.TrimSpace(string(out))}

	h := start(t, cfg, u.Username)
	ctx, cancel := testenv.Context(t)
	defer cancel()
	d := StartDialog(ctx, func(ctx context.Context, conv Conversation) error { return h.Authenticate(ctx, conv, 0) })
	var prompts []string
	for i := 0; ; i++ {
		r, done, err := d.Next(ctx)
		if done {
			if err != nil {
				t.Fatalf("authentication with password and OTP: %v (prompts %q)", err, prompts)
			}
			break
		}
		if err != nil || i >= len(answers) {
			t.Fatalf("round %d: %v, %+v", i, err, r)
		}
		prompts = append(prompts, r.Prompt.Text)
		d.Answer(ctx, answers[i])
	}
	if len(prompts) != 2 || !strings.Contains(prompts[1], "One-time password") {
		t.Fatalf("prompts %q, want a password then a one-time password", prompts)
	}
}

func TestSessionEnvAndMotd(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // pam_motd reads as the user
	os.Chmod(filepath.Dir(dir), 0o755)
	envFile := filepath.Join(dir, "environment")
	os.WriteFile(envFile, []byte("OFFLOAD_PAM_TEST=from-pam-env\n"), 0o644)
	conf := filepath.Join(dir, "pam_env.conf")
	os.WriteFile(conf, []byte(""), 0o644)
	motd := filepath.Join(dir, "motd")
	os.WriteFile(motd, []byte("motd line for the test\n"), 0o644)
	cfg := service(t, append(unixStack,
		"session required pam_env.so readenv=1 envfile="+envFile+" conffile="+conf,
		"session optional pam_motd.so motd="+motd+" noupdate")...)
	u := testenv.NewUser(t)
	h := start(t, cfg, u.Username)
	r := &recorder{}
	ctx := context.Background()
	if err := h.SetCred(ctx, r.conv, true); err != nil {
		t.Fatal(err)
	}
	if err := h.OpenSession(ctx, r.conv); err != nil {
		t.Fatal(err)
	}
	env, err := h.Env()
	if err != nil || env["OFFLOAD_PAM_TEST"] != "from-pam-env" {
		t.Fatalf("env %v, %v; want OFFLOAD_PAM_TEST from pam_env", env, err)
	}
	if len(r.msgs) == 0 || !strings.Contains(r.msgs[0].Text, "motd line for the test") || r.msgs[0].Style != TextInfo {
		t.Fatalf("messages %+v, want the motd as a text", r.msgs)
	}
	if err := h.CloseSession(ctx, r.conv); err != nil {
		t.Fatal(err)
	}
}

// The helper process for TestSessionLimitsLoginuid: it opens a session
// on the main thread and starts a shell from it, as the per-user root
// helper does.
const helperEnv = "OFFLOAD_PAM_HELPER"

func init() {
	if os.Getenv(helperEnv) != "" {
		runtime.LockOSThread() // keep main (and TestMain) on the main thread
	}
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(helper(spec))
	}
	os.Exit(m.Run())
}

func helper(spec string) int {
	service, user, _ := strings.Cut(spec, ":")
	h, err := Start(Config{Service: service}, user, Items{TTY: "ssh"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer h.End()
	if err := h.OpenSession(context.Background(), nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	cmd := exec.Command("/bin/sh", "-c", "ulimit -Hn; cat /proc/self/loginuid")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	h.CloseSession(context.Background(), nil)
	return 0
}

func TestSessionLimitsLoginuid(t *testing.T) {
	dir := t.TempDir()
	u := testenv.NewUser(t)
	limits := filepath.Join(dir, "limits.conf")
	os.WriteFile(limits, []byte(u.Username+" hard nofile 777\n"), 0o644)
	cfg := service(t, append(unixStack,
		"session required pam_limits.so conf="+limits,
		"session required pam_loginuid.so")...)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+cfg.Service+":"+u.Username)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v: %s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 || fields[0] != "777" || fields[1] != u.Uid {
		t.Fatalf("child of the session: hard nofile and loginuid %q, want 777 and %s", out, u.Uid)
	}
}
