package interop_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sshOptions are the OpenSSH client options every OpenSSH-based client
// uses: no configuration file, the cell's key only, no prompts, no
// known_hosts (the host key is checked by signature, not pinned).
func sshOptions(a *attempt) []string {
	o := []string{"-F", "/dev/null", "-i", a.key(), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-o", fmt.Sprintf("ConnectTimeout=%d", clientTimeout)}
	if a.c.clientRekey {
		o = append(o, "-o", fmt.Sprintf("RekeyLimit=%dK", rekeyBytes>>10))
	}
	return o
}

func (a *attempt) sshArgs(extra ...string) []string {
	args := append(sshOptions(a), "-p", a.s.port, "-l", a.e.user, "127.0.0.1")
	return append(args, extra...)
}

func opensshClient() *client {
	return &client{
		name:    "openssh",
		tools:   []tool{{"ssh", "openssh-client"}, {"scp", "openssh-client"}, {"sftp", "openssh-client"}},
		version: func(*testing.T) string { return firstLine("ssh", "-V") },
		rekey:   true,
		ops: []op{
			{name: "exec", run: func(ctx context.Context, a *attempt) error {
				return a.wantOutput(ctx, execWant, nil, "ssh", a.sshArgs(execCommand)...)
			}},
			{name: "upload", data: true, run: func(ctx context.Context, a *attempt) error {
				dst := a.remotePath("ssh-upload")
				if _, err := a.cmd(ctx, nil, a.e.payload, "ssh", a.sshArgs("cat > "+dst)...); err != nil {
					return err
				}
				return a.checkUpload(dst)
			}},
			{name: "scp", data: true, run: func(ctx context.Context, a *attempt) error {
				return opensshSCP(ctx, a, "scp")
			}},
			{name: "scp -O", data: true, run: func(ctx context.Context, a *attempt) error {
				return opensshSCP(ctx, a, "scp-O", "-O")
			}},
			{name: "sftp", data: true, run: func(ctx context.Context, a *attempt) error {
				up, down := a.remotePath("sftp"), filepath.Join(a.local, "sftp-down")
				batch := filepath.Join(a.local, "sftp-batch")
				if err := os.WriteFile(batch, []byte(fmt.Sprintf("put %s %s\nget %s %s\n", a.e.payload, up, up, down)), 0o600); err != nil {
					return err
				}
				args := append(sshOptions(a), "-b", batch, "-P", a.s.port, a.e.user+"@127.0.0.1")
				if _, err := a.cmd(ctx, nil, "", "sftp", args...); err != nil {
					return err
				}
				return a.checkRoundTrip(up, down)
			}},
			pqOp(opensshPQ),
		},
	}
}

func opensshSCP(ctx context.Context, a *attempt, name string, flags ...string) error {
	up, down := a.remotePath(name), filepath.Join(a.local, name+"-down")
	args := append(append(sshOptions(a), flags...), "-P", a.s.port)
	if _, err := a.cmd(ctx, nil, "", "scp", append(args, a.e.payload, a.e.user+"@127.0.0.1:"+up)...); err != nil {
		return err
	}
	if _, err := a.cmd(ctx, nil, "", "scp", append(args, a.e.user+"@127.0.0.1:"+up, down)...); err != nil {
		return err
	}
	return a.checkRoundTrip(up, down)
}

// sshCommand is sshOptions as one command line, for the tools that take
// the ssh program as a string (git, rsync, lftp). The paths are made by
// the test and hold no spaces.
func sshCommand(a *attempt, extra ...string) string {
	return strings.Join(append(append([]string{a.tools["ssh"]}, sshOptions(a)...), extra...), " ")
}

func gitClient() *client {
	return &client{
		name:    "git",
		tools:   []tool{{"git", "git"}, {"ssh", "openssh-client"}},
		version: func(*testing.T) string { return firstLine("git", "--version") },
		rekey:   true,
		ops: []op{
			{name: "push", data: true, run: gitPush},
			{name: "clone", data: true, run: func(ctx context.Context, a *attempt) error {
				if err := gitPush(ctx, a); err != nil {
					return fmt.Errorf("push before clone: %w", err)
				}
				dst := filepath.Join(a.local, "clone")
				if _, err := a.cmd(ctx, gitEnv(a), "", "git", "clone", "-q", gitURL(a), dst); err != nil {
					return err
				}
				return a.checkUpload(filepath.Join(dst, "payload"))
			}},
			pqOp(opensshPQ),
		},
	}
}

func gitURL(a *attempt) string {
	return "ssh://" + a.e.user + "@127.0.0.1:" + a.s.port + a.remotePath("repo.git")
}

func gitEnv(a *attempt) []string {
	return []string{"GIT_SSH_COMMAND=" + sshCommand(a), "HOME=" + a.local, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=interop", "GIT_AUTHOR_EMAIL=interop@example.invalid",
		"GIT_COMMITTER_NAME=interop", "GIT_COMMITTER_EMAIL=interop@example.invalid"}
}

// gitPush makes a bare repository on the server side (owned by the
// account) and pushes a commit holding the payload into it; the blob the
// server side stored must be the payload.
func gitPush(ctx context.Context, a *attempt) error {
	bare := a.remotePath("repo.git")
	if _, err := os.Stat(bare); err == nil {
		return nil // pushed already in this cell
	}
	env := gitEnv(a)
	work := filepath.Join(a.local, "work")
	steps := [][]string{
		{"init", "-q", "--bare", "-b", "main", bare},
		{"init", "-q", "-b", "main", work},
		{"-C", work, "add", "payload"},
		{"-C", work, "commit", "-q", "-m", "payload"},
	}
	for i, s := range steps {
		if i == 2 {
			if err := copyFile(a.e.payload, filepath.Join(work, "payload"), 0o644); err != nil {
				return err
			}
		}
		if _, err := a.cmd(ctx, env, "", "git", s...); err != nil {
			return err
		}
	}
	if err := a.e.chownTree(bare); err != nil {
		return err
	}
	if _, err := a.cmd(ctx, env, "", "git", "-C", work, "push", "-q", gitURL(a), "main"); err != nil {
		return err
	}
	got := filepath.Join(a.local, "pushed")
	out, err := a.cmd(ctx, append(env, "GIT_DIR="+bare), "", "git", "cat-file", "blob", "main:payload")
	if err != nil {
		return err
	}
	if err := os.WriteFile(got, []byte(out), 0o600); err != nil {
		return err
	}
	return a.checkUpload(got)
}

func rsyncClient() *client {
	return &client{
		name:    "rsync",
		tools:   []tool{{"rsync", "rsync"}, {"ssh", "openssh-client"}},
		version: func(*testing.T) string { return firstLine("rsync", "--version") },
		rekey:   true,
		ops: []op{
			{name: "upload+download", data: true, run: func(ctx context.Context, a *attempt) error {
				up, down := a.remotePath("rsync"), filepath.Join(a.local, "rsync-down")
				rsh := sshCommand(a, "-p", a.s.port)
				host := a.e.user + "@127.0.0.1:"
				if _, err := a.cmd(ctx, nil, "", "rsync", "-e", rsh, a.e.payload, host+up); err != nil {
					return err
				}
				if _, err := a.cmd(ctx, nil, "", "rsync", "-e", rsh, host+up, down); err != nil {
					return err
				}
				return a.checkRoundTrip(up, down)
			}},
			pqOp(opensshPQ),
		},
	}
}

func lftpClient() *client {
	return &client{
		name:    "lftp",
		tools:   []tool{{"lftp", "lftp"}, {"ssh", "openssh-client"}},
		version: func(*testing.T) string { return firstLine("lftp", "--version") },
		rekey:   true,
		ops: []op{
			{name: "sftp", data: true, run: func(ctx context.Context, a *attempt) error {
				up, down := a.remotePath("lftp"), filepath.Join(a.local, "lftp-down")
				script := fmt.Sprintf("set sftp:connect-program %q; set net:max-retries 1; set net:timeout %d; "+
					"open -u %s, -p %s sftp://127.0.0.1; put %s -o %s; get %s -o %s; bye",
					sshCommand(a, "-a", "-x"), clientTimeout, a.e.user, a.s.port, a.e.payload, up, up, down)
				if _, err := a.cmd(ctx, []string{"HOME=" + a.local}, "", "lftp", "-c", script); err != nil {
					return err
				}
				return a.checkRoundTrip(up, down)
			}},
			pqOp(opensshPQ),
		},
	}
}

// chownTree gives a tree made by the test to the account.
func (e *env) chownTree(root string) error {
	if e.shared {
		return nil
	}
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, e.uid, e.gid)
	})
}
