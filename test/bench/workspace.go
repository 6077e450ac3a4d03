package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// workspace is the run's temp directory and everything in it: keys,
// known_hosts, server configs and logs, the payload, upload targets and
// the SoftHSM token.
type workspace struct {
	Base           string // parent of Dir, removed when empty
	Dir            string
	HostKey        string // ed25519, shared by every server
	ClientKey      string
	AuthorizedKeys string
	KnownHosts     string
	Payload        string
	TextPayload    string // the compressible payload, when compression rows run
	Remote         string // directory uploads go to
	Local          string // directory downloads go to
	PinFile        string // SoftHSM user PIN, when a token was made
	SoftHSMConf    string
	Token          string // token label
}

// workBase is the parent of the workspace. Not /tmp: sshd-style
// ownership checks (offload has no StrictModes switch) reject an
// authorized_keys file below a world-writable directory, sticky or not.
func workBase() (string, error) {
	if d := os.Getenv("OFFLOAD_BENCH_DIR"); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("bench: no directory for the workspace (set OFFLOAD_BENCH_DIR): %w", err)
	}
	return filepath.Join(cache, "offload-bench"), nil
}

// newWorkspace makes the directory and the keys.
func newWorkspace(ctx context.Context, t *tools) (*workspace, error) {
	base, err := workBase()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	removeStale(base)
	dir, err := os.MkdirTemp(base, "run-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	w := &workspace{
		Base:           base,
		Dir:            dir,
		HostKey:        filepath.Join(dir, "host_ed25519"),
		ClientKey:      filepath.Join(dir, "client_ed25519"),
		AuthorizedKeys: filepath.Join(dir, "authorized_keys"),
		KnownHosts:     filepath.Join(dir, "known_hosts"),
		Payload:        filepath.Join(dir, "payload.bin"),
		Remote:         filepath.Join(dir, "remote"),
		Local:          filepath.Join(dir, "local"),
	}
	for _, d := range []string{w.Remote, w.Local} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return w, fmt.Errorf("bench: %w", err)
		}
	}
	for _, k := range []string{w.HostKey, w.ClientKey} {
		if err := keygen(ctx, t.Keygen, k); err != nil {
			return w, err
		}
	}
	pub, err := os.ReadFile(w.ClientKey + ".pub")
	if err != nil {
		return w, fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(w.AuthorizedKeys, pub, 0o600); err != nil {
		return w, fmt.Errorf("bench: %w", err)
	}
	return w, nil
}

func keygen(ctx context.Context, prog, path string) error {
	out, err := exec.CommandContext(ctx, prog, "-q", "-t", "ed25519", "-N", "", "-C", "offload-bench", "-f", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bench: ssh-keygen: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ownerFile holds the pid of the harness that owns a workspace.
const ownerFile = "owner.pid"

// removeStale deletes workspaces whose harness is gone without cleaning
// up (killed with SIGKILL, say); its servers died with it (Pdeathsig).
// Workspaces without an owner file, or whose owner lives, are left alone.
func removeStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "run-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || processExists(pid) {
			continue
		}
		os.RemoveAll(d)
	}
}

// processExists reports whether pid names a live process.
func processExists(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

// writePayload fills the payload file with size pseudo-random bytes, so
// nothing on the way can compress it.
func (w *workspace) writePayload(size int64) error {
	f, err := os.Create(w.Payload)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	src := rand.NewChaCha8([32]byte{'o', 'f', 'f', 'l', 'o', 'a', 'd'})
	if _, err := io.CopyN(f, src, size); err != nil {
		f.Close()
		return fmt.Errorf("bench: payload: %w", err)
	}
	return f.Close()
}

// writeKnownHosts trusts the host key on every server port.
func (w *workspace) writeKnownHosts(host string, ports []int) error {
	pub, err := os.ReadFile(w.HostKey + ".pub")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	f := strings.Fields(string(pub))
	if len(f) < 2 {
		return errors.New("bench: host public key is malformed")
	}
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "[%s]:%d %s %s\n", host, p, f[0], f[1])
	}
	return os.WriteFile(w.KnownHosts, []byte(b.String()), 0o600)
}

// privsepDir is the directory OpenSSH's sshd insists on at start.
const privsepDir = "/run/sshd"

// ensurePrivsepDir creates /run/sshd when it is missing, as the
// openssh-server package does at boot. It is left in place afterwards:
// any other sshd started meanwhile needs it for every connection.
func (w *workspace) ensurePrivsepDir() error {
	if _, err := os.Stat(privsepDir); err == nil {
		return nil
	}
	if err := os.Mkdir(privsepDir, 0o755); err != nil {
		return fmt.Errorf("bench: OpenSSH sshd needs %s: %w", privsepDir, err)
	}
	return nil
}

// makeToken creates a SoftHSM configuration and token in the workspace.
// The PIN is a throwaway value; offload reads it from a file.
func (w *workspace) makeToken(ctx context.Context, util string) error {
	tokdir := filepath.Join(w.Dir, "softhsm")
	if err := os.Mkdir(tokdir, 0o700); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	w.SoftHSMConf = filepath.Join(w.Dir, "softhsm2.conf")
	conf := fmt.Sprintf("directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n", tokdir)
	if err := os.WriteFile(w.SoftHSMConf, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	const pin = "4711-bench"
	w.Token, w.PinFile = "offload-bench", filepath.Join(w.Dir, "token.pin")
	if err := os.WriteFile(w.PinFile, []byte(pin+"\n"), 0o600); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	cmd := exec.CommandContext(ctx, util, "--init-token", "--free", "--label", w.Token, "--pin", pin, "--so-pin", "4711-bench-so")
	cmd.Env = append(os.Environ(), "SOFTHSM2_CONF="+w.SoftHSMConf)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bench: softhsm2-util --init-token: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// remove deletes the workspace.
func (w *workspace) remove() error {
	err := os.RemoveAll(w.Dir)
	os.Remove(w.Base) // only when empty: another run may be using it
	return err
}
