package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
)

// PuTTY's tools read settings from a saved session under $HOME/.putty;
// each attempt gets its own $HOME with a session named "interop" (the
// rekey limit has no command-line option).
func puttyHome(a *attempt) ([]string, error) {
	dir := filepath.Join(a.local, ".putty", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	settings := "RekeyBytes=1G\n"
	if a.c.clientRekey {
		settings = fmt.Sprintf("RekeyBytes=%dK\n", rekeyBytes>>10)
	}
	if err := os.WriteFile(filepath.Join(dir, "interop"), []byte(settings), 0o600); err != nil {
		return nil, err
	}
	return []string{"HOME=" + a.local}, nil
}

// puttyArgs are the options plink, pscp and psftp share: batch mode (no
// prompts), the cell's key, and the server's host keys pinned by
// fingerprint (PuTTY has no "accept anything" switch).
func puttyArgs(a *attempt, port string) []string {
	args := []string{"-load", "interop", "-batch", "-noagent", port, a.s.port, "-l", a.e.user, "-i", a.ppk()}
	for _, k := range a.s.hostPubs {
		args = append(args, "-hostkey", ssh.FingerprintSHA256(k))
	}
	return args
}

func puttyClient() *client {
	return &client{
		name:     "putty",
		tools:    []tool{{"plink", "putty-tools"}, {"pscp", "putty-tools"}, {"psftp", "putty-tools"}, {"puttygen", "putty-tools"}},
		version:  func(*testing.T) string { return firstLine("plink", "-V") },
		rekey:    true,
		noCommon: []string{"does not correspond to any supported algorithm", "Couldn't agree a "},
		ops: []op{
			{name: "plink exec", run: func(ctx context.Context, a *attempt) error {
				env, err := puttyHome(a)
				if err != nil {
					return err
				}
				return a.wantOutput(ctx, execWant, env, "plink", append(puttyArgs(a, "-P"), "127.0.0.1", execCommand)...)
			}},
			{name: "plink upload", data: true, run: func(ctx context.Context, a *attempt) error {
				env, err := puttyHome(a)
				if err != nil {
					return err
				}
				dst := a.remotePath("plink-upload")
				if _, err := a.cmd(ctx, env, a.e.payload, "plink", append(puttyArgs(a, "-P"), "127.0.0.1", "cat > "+dst)...); err != nil {
					return err
				}
				return a.checkUpload(dst)
			}},
			{name: "pscp -scp", data: true, run: func(ctx context.Context, a *attempt) error { return pscp(ctx, a, "-scp") }},
			{name: "pscp -sftp", data: true, run: func(ctx context.Context, a *attempt) error { return pscp(ctx, a, "-sftp") }},
			{name: "psftp", data: true, run: func(ctx context.Context, a *attempt) error {
				env, err := puttyHome(a)
				if err != nil {
					return err
				}
				up, down := a.remotePath("psftp"), filepath.Join(a.local, "psftp-down")
				batch := filepath.Join(a.local, "psftp-batch")
				if err := os.WriteFile(batch, []byte(fmt.Sprintf("put %s %s\nget %s %s\n", a.e.payload, up, up, down)), 0o600); err != nil {
					return err
				}
				if _, err := a.cmd(ctx, env, "", "psftp", append(puttyArgs(a, "-P"), "-b", batch, "127.0.0.1")...); err != nil {
					return err
				}
				return a.checkRoundTrip(up, down)
			}},
			pqOp(func() string {
				// PuTTY has no query for its key exchanges; its binary
				// names the ones it has.
				const name = "sntrup761x25519-sha512@openssh.com"
				if p, err := exec.LookPath("plink"); err == nil {
					if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(name)) {
						return name
					}
				}
				return ""
			}),
		},
	}
}

func pscp(ctx context.Context, a *attempt, proto string) error {
	env, err := puttyHome(a)
	if err != nil {
		return err
	}
	up, down := a.remotePath("pscp"+proto), filepath.Join(a.local, "pscp"+proto+"-down")
	args := append(puttyArgs(a, "-P"), "-q", proto)
	if _, err := a.cmd(ctx, env, "", "pscp", append(args, a.e.payload, "127.0.0.1:"+up)...); err != nil {
		return err
	}
	if _, err := a.cmd(ctx, env, "", "pscp", append(args, "127.0.0.1:"+up, down)...); err != nil {
		return err
	}
	return a.checkRoundTrip(up, down)
}
