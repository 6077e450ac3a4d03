package pkcs11

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/offload/offload/internal/fileperm"
	"github.com/offload/offload/internal/pkcs11faults"
	"github.com/offload/offload/providers/pkcs11/uri"
)

// DefaultName is the provider name when Config.Name is empty.
const DefaultName = "pkcs11"

// PINEnv is the environment variable read for a PIN when neither the URI
// nor the Config gives one.
const PINEnv = "OFFLOAD_PKCS11_PIN"

// Defaults for Config fields left zero.
const (
	DefaultMaxSessions    = 8
	DefaultWaitTimeout    = 5 * time.Second
	DefaultHealthInterval = 5 * time.Second
	DefaultDeadline       = 10 * time.Second
	DefaultCloseTimeout   = 5 * time.Second
	DefaultAEADLanes      = 4
)

// Config configures a PKCS #11 provider over one module and one or more
// of its tokens.
type Config struct {
	// Name is the provider's name in the registry; "pkcs11" when empty.
	Name string
	// ModulePath is the module's path, or a bare module name ("softhsm2")
	// looked up as RFC 7512's module-name is. Empty: the first token URI's
	// module-path or module-name.
	ModulePath string
	// Tokens are pkcs11: URIs selecting the tokens to use, matched before
	// any login. Each may carry its own pin-source, pin-value and
	// max-sessions. Empty: every initialized token of the module.
	Tokens []*uri.URI
	// PINSource is a file holding the user PIN (a path or file: URI), used
	// for tokens whose URI gives none.
	PINSource string
	// PIN is the user PIN itself. Prefer PINSource or the environment:
	// a PIN in a config file or on a command line is easily seen.
	PIN string
	// PINEnv names the environment variable holding the PIN;
	// OFFLOAD_PKCS11_PIN when empty.
	PINEnv string
	// PINPrompt, when set, is asked for a PIN no other source gives.
	PINPrompt func(token string) (string, error)
	// MaxSessions bounds each token's session pool; a token URI's
	// max-sessions overrides it. Zero: DefaultMaxSessions, or the token's
	// own limit when it states a lower one. AEADs hold sessions for their
	// life and may take all but one of a pool of two or more: the last is
	// kept for signatures and key lookups.
	MaxSessions int
	// AEADLanes is how many sessions one AEAD may use at once, on one
	// token or spread over several (least busy first): its first session
	// is taken when it is made, and another only when calls overlap — a
	// pipelining SSH connection keeps several packets in flight
	// (provider.ConcurrentAEAD) — and a session is free (never the last
	// of the pool). Zero: DefaultAEADLanes; 1: one session per AEAD.
	AEADLanes int
	// WaitTimeout bounds the wait for a free session (DefaultWaitTimeout).
	WaitTimeout time.Duration
	// HealthInterval is how often each token is probed
	// (DefaultHealthInterval); negative turns the probe off.
	HealthInterval time.Duration
	// Failover maps a token label to the label of a second token that
	// holds the same keys; signers move there when the first is lost.
	Failover map[string]string
	// Peers maps a token label to the labels of tokens that hold the same
	// keys and share its signing (a token URI's peer-token says the
	// same): a signature goes to the least busy of them — active-active,
	// as an HSM group balances its members — and skips one that fails.
	// The relation is symmetric, and a peer's peers are peers. Every key
	// is checked on each token before it signs there: a token holding a
	// different key under the name is never used.
	Peers map[string][]string
	// Deadline bounds an operation that takes no context (Sign, a key
	// agreement) or whose context has a later deadline: the wait for a
	// session, the retries and the recovery together (DefaultDeadline). A
	// call already inside the module cannot be interrupted.
	Deadline time.Duration
	// CloseTimeout bounds how long Close waits for calls in flight
	// (DefaultCloseTimeout). Calls still running then keep the module
	// initialized: it is never finalized under a running call.
	CloseTimeout time.Duration
	// NoFallback makes an AEAD whose token fails in the middle of a
	// connection report the failure instead of finishing the connection
	// in Go with the same key: SealErr and Open return it (the AEADs
	// implement provider.FallibleAEAD); plain Seal, which cannot return
	// an error, panics — callers that set NoFallback use SealErr.
	NoFallback bool
	// AllowMissing makes Open succeed when a token of Tokens is not
	// present or cannot be attached (failing, or its PIN refused): the
	// token stays pending, Pending and Health say why, and the health
	// probe attaches it when it appears (never after a refused PIN). A
	// key on a pending token fails closed with ErrTokenUnavailable. The
	// module itself must load.
	AllowMissing bool
	// StateDir, when set, is where refused PINs are recorded (see PINs in
	// the package documentation): a PIN a token refused is not sent
	// again, by this process or a later one, until its source changes.
	// Empty: refusals are remembered for the life of the process only.
	StateDir string
	// Logger receives fault and recovery reports; PINs never reach it.
	Logger *slog.Logger
	// Faults, when set, makes chosen module calls fail or answer late.
	// It is for this module's tests: its type is internal, so outside
	// the module it can only be nil.
	Faults *pkcs11faults.Injector

	// testHooks, in tests, wraps the module's function table (after Faults).
	testHooks *testHooks
}

func (c *Config) name() string {
	if c.Name != "" {
		return c.Name
	}
	return DefaultName
}

func (c *Config) aeadLanes() int {
	if c.AEADLanes > 0 {
		return c.AEADLanes
	}
	return DefaultAEADLanes
}

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// ModuleDirs are searched, in order, for a module named by module-name.
var ModuleDirs = []string{
	"/usr/lib/" + multiarch() + "/pkcs11",
	"/usr/lib/" + multiarch() + "/softhsm",
	"/usr/lib/softhsm",
	"/usr/lib/" + multiarch(),
	"/usr/lib64/pkcs11",
	"/usr/lib64",
	"/usr/lib/pkcs11",
	"/usr/lib",
	"/usr/local/lib/softhsm",
	"/usr/local/lib",
	"/opt/homebrew/lib/softhsm",
}

// p11KitModuleDirs hold p11-kit's module files ("NAME.module", with a
// "module:" line), which name modules the way module-name does.
var p11KitModuleDirs = []string{"/etc/pkcs11/modules", "/usr/share/p11-kit/modules"}

func multiarch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64-linux-gnu"
	case "arm64":
		return "aarch64-linux-gnu"
	}
	return runtime.GOARCH + "-linux-gnu"
}

// ResolveModule turns a module path or bare module name into a path that
// exists. A name is looked up as p11-kit does (NAME.module files), then as
// NAME.so or libNAME.so in ModuleDirs.
func ResolveModule(nameOrPath string) (string, error) {
	if nameOrPath == "" {
		return "", errors.New("pkcs11: no module given (set a module path, or module-path/module-name in the URI)")
	}
	if strings.ContainsRune(nameOrPath, '/') {
		if _, err := os.Stat(nameOrPath); err != nil {
			return "", &ModuleError{Module: nameOrPath, Err: err}
		}
		return nameOrPath, nil
	}
	name := strings.TrimSuffix(nameOrPath, ".so")
	for _, dir := range p11KitModuleDirs {
		if p := moduleFromP11KitFile(filepath.Join(dir, name+".module")); p != "" {
			return p, nil
		}
	}
	var tried []string
	for _, dir := range ModuleDirs {
		for _, f := range []string{name + ".so", "lib" + name + ".so"} {
			p := filepath.Join(dir, f)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			tried = append(tried, p)
		}
	}
	return "", &ModuleError{Module: nameOrPath, Err: fmt.Errorf("module-name %q not found (looked for %s.module in %s and in %d places such as %s)",
		nameOrPath, name, strings.Join(p11KitModuleDirs, ", "), len(tried), tried[0])}
}

func moduleFromP11KitFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "module" {
			continue
		}
		v = strings.TrimSpace(v)
		if !strings.HasPrefix(v, "/") {
			for _, dir := range ModuleDirs {
				if _, err := os.Stat(filepath.Join(dir, v)); err == nil {
					return filepath.Join(dir, v)
				}
			}
			return ""
		}
		if _, err := os.Stat(v); err == nil {
			return v
		}
	}
	return ""
}

// ReadPINSource reads a PIN from a pin-source: a file path or a file: URI.
// One trailing newline is removed. A file the process's user owns that
// group or others may access is refused (internal/fileperm).
func ReadPINSource(src string) (string, error) {
	path := src
	if rest, ok := strings.CutPrefix(src, "file:"); ok {
		path = strings.TrimPrefix(rest, "//")
		if !strings.HasPrefix(path, "/") && strings.HasPrefix(rest, "//") {
			return "", fmt.Errorf("pkcs11: pin-source %q: only local file: URIs are supported", src)
		}
		if p, err := url.PathUnescape(path); err == nil {
			path = p
		}
	} else if strings.Contains(src, ":") && !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, ".") {
		return "", fmt.Errorf("pkcs11: pin-source %q: only files are supported (a path or file: URI)", src)
	}
	b, err := readPINFile(path)
	if err != nil {
		return "", fmt.Errorf("pkcs11: pin-source: %w", err)
	}
	pin := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pin == "" {
		return "", fmt.Errorf("pkcs11: pin-source %s is empty", path)
	}
	return pin, nil
}

// pinSource says where a PIN came from, so that a PIN the token refused
// is recognised when it comes again (see PINGuard).
type pinSource struct {
	Kind string // "pin-source", "pin-value", "Config.PIN", "Config.PINSource", "environment", "prompt"
	Path string `json:",omitempty"` // the file of a pin-source
	Env  string `json:",omitempty"` // the variable of "environment"
}

func (s pinSource) isFile() bool { return s.Path != "" }

func (s pinSource) String() string {
	switch {
	case s.Path != "":
		return s.Kind + " " + s.Path
	case s.Env != "":
		return "$" + s.Env
	}
	return s.Kind
}

// readBounded reads at most limit bytes of a file, failing on a larger one.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a PIN file", path, limit)
	}
	return b, nil
}

// readPINFile reads at most 4 KiB of a PIN file, which only its owner
// may access when it is the process's user's (internal/fileperm, the
// rule OpenSSH applies to private keys).
func readPINFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := fileperm.Check(f, path, "PIN"); err != nil {
		return nil, err
	}
	const limit = 4096
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a PIN file", path, limit)
	}
	return b, nil
}

// resolvePIN finds the PIN for a token: its URI's pin-value or pin-source,
// then the Config's PIN or PINSource, then the environment, then the prompt.
// It returns "" with no error when there is none (the token may need none).
func (c *Config) resolvePIN(u *uri.URI, token string) (string, pinSource, error) {
	switch {
	case u != nil && u.PINValue != "":
		return u.PINValue, pinSource{Kind: "pin-value"}, nil
	case u != nil && u.PINSource != "":
		pin, err := ReadPINSource(u.PINSource)
		return pin, pinSource{Kind: "pin-source", Path: pinPath(u.PINSource)}, err
	case c.PIN != "":
		return c.PIN, pinSource{Kind: "Config.PIN"}, nil
	case c.PINSource != "":
		pin, err := ReadPINSource(c.PINSource)
		return pin, pinSource{Kind: "Config.PINSource", Path: pinPath(c.PINSource)}, err
	}
	env := c.PINEnv
	if env == "" {
		env = PINEnv
	}
	if v := os.Getenv(env); v != "" {
		return v, pinSource{Kind: "environment", Env: env}, nil
	}
	if c.PINPrompt != nil {
		pin, err := c.PINPrompt(token)
		return pin, pinSource{Kind: "prompt"}, err
	}
	return "", pinSource{}, nil
}

// pinPath is the file a pin-source names.
func pinPath(src string) string {
	path := src
	if rest, ok := strings.CutPrefix(src, "file:"); ok {
		path = strings.TrimPrefix(rest, "//")
		if p, err := url.PathUnescape(path); err == nil {
			path = p
		}
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
