package postauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/pam"
)

// PAM sessions. pam_open_session must run in the process whose limits,
// audit login uid and session the user's processes inherit, as root, and
// pam_close_session as root once they are gone. So with UsePAM a user's
// post-auth process is two: a small root session keeper (this file) that
// opens the PAM session and starts the post-auth process proper, which
// drops to the user as usual, then closes the session when it ends.

// pamEnvVar carries the PAM environment from the keeper to the post-auth
// process, which gives it to every session.
const pamEnvVar = "OFFLOAD_SSHD_PAM_ENV"

// pamUmaskVar carries the file-creation mask a session module set
// (pam_umask) from the keeper to the post-auth process, for its sessions.
const pamUmaskVar = "OFFLOAD_SSHD_PAM_UMASK"

// pamMsgVar carries the texts the session modules showed (pam_motd's
// message of the day) from the keeper to the post-auth process, which
// prints them at interactive logins, as OpenSSH's login messages.
const pamMsgVar = "OFFLOAD_SSHD_PAM_MSG"

// maxPAMMessages bounds those texts (an environment string may hold
// 128 KiB).
const maxPAMMessages = 32 << 10

// keeperTimeout bounds each PAM call of the keeper (no conversation runs:
// session modules that would ask are answered with nothing).
const keeperTimeout = 30 * time.Second

// SessionMain runs a PAM session keeper: on the monitor's control socket
// (fd 3) it reads the session's settings; fd 4 is the post-auth process's
// socket, which it passes on. It must run on the process's main thread
// (pam_loginuid writes /proc/self/loginuid, which only the main thread
// may): the program locks its main goroutine to it, and RunChild calls
// this from main.
func SessionMain() int {
	child, err := ipc.OpenChild()
	if err != nil {
		fmt.Fprintln(os.Stderr, "offload sshd session:", err)
		return 1
	}
	cfg := child.Config
	if cfg.PAM == nil {
		fmt.Fprintln(os.Stderr, "offload sshd session: no PAM settings")
		return 1
	}
	child.Serve(func(m *ipc.Message) {
		for _, f := range m.Files {
			f.Close()
		}
	})
	return keep(child, cfg)
}

// keep opens the session, runs the post-auth process and closes the
// session.
func keep(child *ipc.Child, cfg *ipc.ChildConfig) int {
	logf := func(msg string, err error) {
		l := &ipc.Log{Level: 8, Msg: msg + ": " + err.Error(), Attrs: []byte(`{"user":` + quote(cfg.User) + `}`)}
		child.Peer.Notify(ipc.TypeLog, l.Marshal())
	}
	ctx, cancel := context.WithTimeout(context.Background(), keeperTimeout)
	defer cancel()
	h, err := pam.Start(pam.Config{Service: cfg.PAM.Service, ConfDir: cfg.PAM.ConfDir}, cfg.User,
		pam.Items{RemoteHost: cfg.PAM.RemoteHost, TTY: "ssh"})
	if err != nil {
		logf("PAM session: start", err)
		return 1
	}
	defer h.End()
	if err := h.SetCred(ctx, nil, true); err != nil {
		logf("PAM session: setcred", err)
		return 1
	}
	before := currentUmask()
	var shown strings.Builder
	if err := h.OpenSession(ctx, collectTexts(&shown)); err != nil {
		logf("PAM session: open", err)
		return 1
	}
	var env []string
	if shown.Len() > 0 {
		env = append(env, pamMsgVar+"="+shown.String())
	}
	if after := currentUmask(); after != before { // pam_umask set one
		env = append(env, fmt.Sprintf("%s=%04o", pamUmaskVar, after))
	}
	code := runPostauth(h, env, logf)
	ctx2, cancel2 := context.WithTimeout(context.Background(), keeperTimeout)
	defer cancel2()
	if err := h.CloseSession(ctx2, nil); err != nil {
		logf("PAM session: close", err)
	}
	h.SetCred(ctx2, nil, false)
	return code
}

// runPostauth starts the post-auth process proper on fd 4, with the PAM
// environment, and waits for it. It runs on the main thread, so the
// child inherits what the session set on it.
func runPostauth(h *pam.Handle, extra []string, logf func(string, error)) int {
	env := append([]string{ipc.RoleEnv + "=" + ipc.RolePostauth, "PATH=/usr/local/bin:/usr/bin:/bin"}, extra...)
	if penv, err := h.Env(); err == nil && len(penv) > 0 {
		env = append(env, pamEnvVar+"="+encodeEnv(penv))
	}
	sock := os.NewFile(4, "post-auth")
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{os.Args[0]}, Env: env, Dir: "/",
		ExtraFiles: []*os.File{sock}, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		logf("PAM session: starting the post-auth process", err)
		return 1
	}
	sock.Close()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			logf("PAM session: the post-auth process ended", err)
			return 1
		}
		return ee.ExitCode()
	}
	return 0
}

// encodeEnv is the PAM environment as JSON NAME=value pairs, sorted.
func encodeEnv(m map[string]string) string {
	var pairs []string
	for k, v := range m {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	b, _ := json.Marshal(pairs)
	return string(b)
}

// pamEnv is what the keeper passed (nil when none).
func pamEnv() []string {
	v := os.Getenv(pamEnvVar)
	if v == "" {
		return nil
	}
	var pairs []string
	if json.Unmarshal([]byte(v), &pairs) != nil {
		return nil
	}
	return pairs
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// currentUmask reads the process's file-creation mask (setting it back).
func currentUmask() int {
	m := syscall.Umask(0o077)
	syscall.Umask(m)
	return m
}

// pamUmask is the mask the keeper passed (nil when none).
func pamUmask() *fs.FileMode {
	v := os.Getenv(pamUmaskVar)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || n > 0o777 {
		return nil
	}
	m := fs.FileMode(n)
	return &m
}

// collectTexts is the keeper's conversation: texts are kept (up to
// maxPAMMessages, each ending in a newline) for the user's logins;
// prompts are answered with nothing, since no client is there to ask.
func collectTexts(b *strings.Builder) pam.Conversation {
	return func(_ context.Context, m pam.Message) (string, error) {
		if m.Style.IsPrompt() || b.Len()+len(m.Text)+1 > maxPAMMessages {
			return "", nil
		}
		text := strings.ToValidUTF8(strings.ReplaceAll(m.Text, "\x00", ""), "?")
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
		return "", nil
	}
}

// pamMessages is what the keeper passed ("" when none).
func pamMessages() string {
	v := os.Getenv(pamMsgVar)
	if len(v) > maxPAMMessages {
		return ""
	}
	return v
}
