package postauth

import (
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
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

// pamVar carries what the PAM session gave the user's processes from the
// keeper to the post-auth process, which gives it to every session: the
// session's environment, the file-creation mask a module set
// (pam_umask), and the texts the modules showed (pam_motd's message of
// the day), printed at interactive logins as OpenSSH's login messages.
// It is an ipc.PAMSessionOpened, as the in-process mode's keeper sends it,
// in base64 (an environment string holds no NUL).
const pamVar = "OFFLOAD_SSHD_PAM_SESSION"

// maxPAMMessages bounds those texts (an environment string may hold
// 128 KiB).
const maxPAMMessages = 32 << 10

// keeperTimeout bounds each PAM call of the keeper (no conversation runs:
// session modules that would ask are answered with nothing).
const keeperTimeout = 30 * time.Second

// PAMKeeperMain runs a PAM keeper (sshd-pam in ps): on the
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
		l := &ipc.Log{Level: 8, Msg: msg + ": " + err.Error(), Attrs: []ipc.LogAttr{{Key: "user", Value: cfg.User}}}
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
	code := runPostauth(s.opened(), logf)
	s.close(logf)
	return code
}

// runPostauth starts the post-auth process proper on fd 4, with what the
// PAM session gave (pamVar), and waits for it. It runs on the main
// thread, so the child inherits what the session set on it.
func runPostauth(opened *ipc.PAMSessionOpened, logf func(string, error)) int {
	env := []string{ipc.RoleEnv + "=" + ipc.RolePostauth, "PATH=/usr/local/bin:/usr/bin:/bin",
		pamVar + "=" + base64.StdEncoding.EncodeToString(opened.Marshal())}
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

// fromKeeper is what the keeper passed in pamVar: the PAM session's
// environment (nil for none), the mask a module set (nil for none) and
// the modules' texts. Without the variable, or with one that does not
// decode, there is none of them.
func fromKeeper() ([]string, *fs.FileMode, string) {
	b, err := base64.StdEncoding.DecodeString(os.Getenv(pamVar))
	if err != nil || len(b) == 0 {
		return nil, nil, ""
	}
	o, err := ipc.ParsePAMSessionOpened(b)
	if err != nil {
		return nil, nil, ""
	}
	var umask *fs.FileMode
	if o.Umask >= 0 {
		m := fs.FileMode(o.Umask)
		umask = &m
	}
	// Clipped: each connection appends its own settings to a copy.
	return slices.Clip(o.Env), umask, o.Messages
}

// currentUmask reads the process's file-creation mask (setting it back).
func currentUmask() int {
	m := syscall.Umask(0o077)
	syscall.Umask(m)
	return m
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
