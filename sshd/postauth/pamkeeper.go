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
// post-auth process is two: a small root PAM keeper (this file) that
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

// PAMKeeperMain runs a PAM keeper (sshd-session in ps): on the
// monitor's control socket (fd 3) it reads the session's settings; fd 4
// is the post-auth process's socket, which it passes on. For an
// in-process server (PAMSession.Spawn, pamclient.go) it starts the
// connection's programs instead (spawn.go). It
// must run on the process's main thread (pam_loginuid writes
// /proc/self/loginuid, which only the main thread may, and a child
// inherits the audit login uid of the thread that forks it): the program
// locks its main goroutine to it, and RunChild calls this from main.
func PAMKeeperMain() int {
	child, err := ipc.OpenChild()
	if err != nil {
		fmt.Fprintln(os.Stderr, "offload sshd session:", err)
		return 1
	}
	cfg := child.Config
	if cfg.PAM == nil {
		fmt.Fprintln(os.Stderr, "offload sshd session:", "no PAM settings")
		return 1
	}
	if cfg.PAM.Spawn {
		return keepSpawning(child, cfg)
	}
	child.Serve(func(m *ipc.Message) {
		for _, f := range m.Files {
			f.Close()
		}
	})
	return keep(child, cfg)
}

// keeperLog is how a keeper logs: through the monitor's socket.
func keeperLog(child *ipc.Child, cfg *ipc.ChildConfig) func(string, error) {
	return func(msg string, err error) {
		l := &ipc.Log{Level: 8, Msg: msg + ": " + err.Error(), Attrs: []byte(`{"user":` + quote(cfg.User) + `}`)}
		child.Peer.Notify(ipc.TypeLog, l.Marshal())
	}
}

// pamSession is a PAM session the keeper opened, with what its modules
// gave the user's processes.
type pamSession struct {
	h     *pam.Handle
	umask int    // the mask a module set, -1 for none
	texts string // the modules' texts (pam_motd)
}

// openPAM starts the transaction, establishes the credentials and opens
// the session, in this process and on this thread.
func openPAM(cfg *ipc.ChildConfig, logf func(string, error)) (*pamSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), keeperTimeout)
	defer cancel()
	h, err := pam.Start(pam.Config{Service: cfg.PAM.Service, ConfDir: cfg.PAM.ConfDir}, cfg.User,
		pam.Items{RemoteHost: cfg.PAM.RemoteHost, TTY: "ssh"})
	if err != nil {
		logf("PAM session: start", err)
		return nil, err
	}
	if err := h.SetCred(ctx, nil, true); err != nil {
		logf("PAM session: setcred", err)
		h.End()
		return nil, err
	}
	before := currentUmask()
	var shown strings.Builder
	if err := h.OpenSession(ctx, collectTexts(&shown)); err != nil {
		logf("PAM session: open", err)
		h.End()
		return nil, err
	}
	s := &pamSession{h: h, umask: -1, texts: shown.String()}
	if after := currentUmask(); after != before { // pam_umask set one
		s.umask = after
	}
	return s, nil
}

// close closes the session, deletes the credentials and ends the
// transaction.
func (s *pamSession) close(logf func(string, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), keeperTimeout)
	defer cancel()
	if err := s.h.CloseSession(ctx, nil); err != nil {
		logf("PAM session: close", err)
	}
	s.h.SetCred(ctx, nil, false)
	s.h.End()
}

// keep opens the session, runs the post-auth process and closes the
// session.
func keep(child *ipc.Child, cfg *ipc.ChildConfig) int {
	logf := keeperLog(child, cfg)
	s, err := openPAM(cfg, logf)
	if err != nil {
		return 1
	}
	var env []string
	if s.texts != "" {
		env = append(env, pamMsgVar+"="+s.texts)
	}
	if s.umask >= 0 {
		env = append(env, fmt.Sprintf("%s=%04o", pamUmaskVar, s.umask))
	}
	code := runPostauth(s.h, env, logf)
	s.close(logf)
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
