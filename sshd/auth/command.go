package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/offload/offload/internal/argv"
	"golang.org/x/crypto/ssh"
)

// DefaultCommandTimeout bounds AuthorizedKeysCommand and
// AuthorizedPrincipalsCommand (OpenSSH has no bound).
const DefaultCommandTimeout = 30 * time.Second

// The tokens each command accepts, as sshd_config(5) lists them.
const (
	keysCommandTokens       = "%CDfhktUu"
	principalsCommandTokens = "%CDFfhiKksTtUu"
)

// commandEnv is the environment a command gets.
var commandEnv = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin"}

// validateCommand checks a command line and its user at Validate time.
func validateCommand(field, line, cmdUser, tokens string) error {
	if line == "" || line == "none" {
		return nil
	}
	argv, err := splitArgs(line)
	if err != nil {
		return &ConfigError{field, err.Error()}
	}
	if !filepath.IsAbs(argv[0]) {
		return &ConfigError{field, "the program must be given by an absolute path"}
	}
	if cmdUser == "" {
		return &ConfigError{field + "User", "must be set when " + field + " is (as in OpenSSH)"}
	}
	for _, a := range argv[1:] {
		if _, err := expandCommandTokens(a, tokens, nil); err != nil {
			return &ConfigError{field, err.Error()}
		}
	}
	return nil
}

// splitArgs splits a command line as OpenSSH's sshd does (package argv,
// a '#' included as an argument).
func splitArgs(line string) ([]string, error) {
	args, err := argv.Split(line, false)
	if err != nil {
		return nil, errors.New("unterminated quote in command line")
	}
	if len(args) == 0 {
		return nil, errors.New("empty command line")
	}
	return args, nil
}

// expandCommandTokens replaces the tokens allowed in a command argument;
// vals nil only checks.
func expandCommandTokens(arg, allowed string, vals map[byte]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(arg); i++ {
		if arg[i] != '%' {
			b.WriteByte(arg[i])
			continue
		}
		if i+1 == len(arg) {
			return "", fmt.Errorf("argument %s ends in %%", quote(arg))
		}
		i++
		t := arg[i]
		if !strings.ContainsRune(allowed, rune(t)) {
			return "", fmt.Errorf("argument %s: token %%%c not allowed here", quote(arg), t)
		}
		if t == '%' {
			b.WriteByte('%')
		} else {
			b.WriteString(vals[t])
		}
	}
	return b.String(), nil
}

// tokenValues are the command tokens for the user and key.
func (s *decider) tokenValues(key ssh.PublicKey) map[byte]string {
	// %C: client address and port, server address and port; %D: the
	// routing domain, empty (offload does not use routing domains).
	v := map[byte]string{'h': s.acct.u.HomeDir, 'u': s.user, 'U': s.acct.u.Uid, 'D': "",
		'C': s.addr.String() + " " + strconv.Itoa(int(s.port)) + " " + hostPort(s.local)}
	if key == nil {
		return v
	}
	v['f'] = fingerprint(key)
	v['k'] = base64.StdEncoding.EncodeToString(key.Marshal())
	v['t'] = key.Type()
	if c, ok := key.(*ssh.Certificate); ok {
		v['F'] = ssh.FingerprintSHA256(c.SignatureKey)
		v['K'] = base64.StdEncoding.EncodeToString(c.SignatureKey.Marshal())
		v['T'] = c.SignatureKey.Type()
		v['i'] = c.KeyId
		v['s'] = strconv.FormatUint(c.Serial, 10)
	}
	return v
}

// CommandError is an AuthorizedKeysCommand or AuthorizedPrincipalsCommand
// whose output was not used.
type CommandError struct {
	Field string
	Err   error
}

func (e *CommandError) Error() string { return "auth: " + e.Field + ": " + e.Err.Error() }
func (e *CommandError) Unwrap() error { return e.Err }

// runCommand runs a keys or principals command for key and returns its
// output, at most MaxFileSize bytes, as OpenSSH would use it.
func (s *decider) runCommand(field, line, cmdUser, tokens string, key ssh.PublicKey) ([]byte, error) {
	out, err := s.execCommand(line, cmdUser, tokens, key)
	if err != nil {
		err = &CommandError{field, err}
		s.logf(s.log.Error, "%s %s failed: %v", field, line, err.(*CommandError).Err)
	}
	return out, err
}

func (s *decider) execCommand(line, cmdUser, tokens string, key ssh.PublicKey) ([]byte, error) {
	argv, err := splitArgs(line)
	if err != nil {
		return nil, err
	}
	if err := checkSafePath(argv[0]); err != nil {
		return nil, err
	}
	vals := s.tokenValues(key)
	for i := 1; i < len(argv); i++ {
		if argv[i], err = expandCommandTokens(argv[i], tokens, vals); err != nil {
			return nil, err
		}
	}
	if len(argv) == 1 {
		argv = append(argv, s.user) // no arguments: the user name
	}
	cred, err := commandCredential(cmdUser)
	if err != nil {
		return nil, err
	}
	timeout := s.cfg.CommandTimeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return runBounded(ctx, argv, cred)
}

// runBounded runs argv with no stdin and a discarded stderr and returns
// its stdout; more than MaxFileSize bytes, a timeout or a non-zero exit
// fail.
func runBounded(ctx context.Context, argv []string, cred *syscall.Credential) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = commandEnv, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	n, rerr := io.Copy(&buf, io.LimitReader(out, MaxFileSize+1))
	if n > MaxFileSize {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	werr := cmd.Wait()
	switch {
	case n > MaxFileSize:
		return nil, fmt.Errorf("%w: more than %d bytes of output", errTooLarge, MaxFileSize)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("timed out: %w", ctx.Err())
	case werr != nil:
		return nil, werr
	case rerr != nil:
		return nil, rerr
	}
	return buf.Bytes(), nil
}

// commandCredential is the user a command runs as. Without root it can
// only be the running user.
func commandCredential(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("command user: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	if os.Geteuid() != 0 {
		if uint64(os.Geteuid()) != uid {
			return nil, fmt.Errorf("cannot run as %s without root", name)
		}
		return nil, nil
	}
	c := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil {
				c.Groups = append(c.Groups, uint32(g))
			}
		}
	}
	return c, nil
}

// checkSafePath is OpenSSH's safe_path for a command: the program and
// every directory above it are owned by root and not writable by group
// or others.
func checkSafePath(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", real)
	}
	for p := real; ; p = filepath.Dir(p) {
		if err := rootOwned(p); err != nil {
			return err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func rootOwned(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	uid, ok := fileOwner(fi)
	if ok && uid != 0 {
		return fmt.Errorf("%w: %s is owned by uid %d, not root", errBadOwner, p, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others", errBadOwner, p)
	}
	return nil
}

// hostPort is "address port" of a, or "" for an unknown address.
func hostPort(a net.Addr) string {
	if a == nil {
		return ""
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return ""
	}
	return ap.Addr().Unmap().String() + " " + strconv.Itoa(int(ap.Port()))
}
